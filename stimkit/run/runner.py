"""Run one association test for one encoder and write it to the results tables."""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import asdict, dataclass
from math import log10

import numpy as np
import polars as pl
import pyarrow as pa

from .. import StimkitError, __version__, encoders, stats, store
from ..catalog import tests as catalog
from ..encoders import embeddings
from ..stats import sampler
from ..catalog.tests import ROLES, TestDef
from ..encoders import Encoder
from ..seeding import rng_for


@dataclass(frozen=True)
class Options:
    budget: int = stats.DEFAULT_BUDGET
    method: str = "auto"          # auto | exact | sampled | parametric
    alternative: str = "greater"
    seed: int = 0                 # permutation samples and bootstrap draws only
    ddof: int = 1
    clustered: bool = False       # permute whole words (sentence tests)
    bootstrap: int = 0            # replicates for a CI of d; 0 = none
    ci_level: float = 0.95
    balance: str | None = None    # None: the test's own policy
    cut_seed: int = 0             # which items balance=cut drops: part of the test, never --seed
    cuts: int = 1                 # > 1: also run K independent cuts and store their spread
    alpha: float = 0.01           # for the share of cuts that reject, and the power warning

    def validate(self):
        """Refuse values and combinations that have no meaning, before any work."""
        if self.method not in stats.METHODS:
            raise StimkitError(f"unknown p-value method {self.method!r} (known: {', '.join(stats.METHODS)})")
        if self.alternative not in stats.ALTERNATIVES:
            raise StimkitError(f"unknown alternative {self.alternative!r} (known: {', '.join(stats.ALTERNATIVES)})")
        if self.budget < 2:
            raise StimkitError("the sample budget must be at least 2")
        if self.balance is not None and self.balance not in catalog.BALANCE_POLICIES:
            raise StimkitError(f"unknown balance policy {self.balance!r} (known: {', '.join(catalog.BALANCE_POLICIES)})")
        if self.clustered and self.method == "parametric":
            raise StimkitError("--clustered has no parametric form: use --method auto, exact or sampled")
        if self.bootstrap < 0:
            raise StimkitError(f"--bootstrap must be 0 (none) or a number of replicates, not {self.bootstrap}")
        if self.cuts < 1:
            raise StimkitError(f"--cuts must be at least 1, not {self.cuts}")
        if not 0 < self.alpha < 1:
            raise StimkitError(f"--alpha must be between 0 and 1 (exclusive), not {self.alpha}")
        if not 0 < self.ci_level < 1:
            raise StimkitError(f"the CI level must be between 0 and 1, not {self.ci_level}")
        for name in ("seed", "cut_seed"):
            if not 0 <= getattr(self, name) < 2 ** 63:
                raise StimkitError(f"--{name.replace('_', '-')} must be between 0 and 2^63 - 1, not {getattr(self, name)}")

    def for_test(self, test: TestDef) -> str:
        """The balance policy this test runs under; refuses options that make no sense for it."""
        policy = self.balance or test.balance
        if self.cuts > 1 and policy == "none":
            raise StimkitError(f"test {test.name!r}: --cuts needs a random balance (cut or drop-words), not balance=none")
        if self.clustered and test.context == "word":
            raise StimkitError(f"test {test.name!r}: --clustered permutes words with their sentences; a word-level test has one stimulus a word")
        return policy


def start_run(con, command: str, seed: int) -> str:
    run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    con.execute("INSERT INTO runs (run_id, command, seed, stimkit_version) VALUES (?, ?, ?, ?)",
                [run_id, command, seed, __version__])
    return run_id


@dataclass
class Prepared:
    """A test's four sets for one encoder: the stimuli, their vectors, and what was dropped."""
    frames: dict[str, pl.DataFrame]      # every selected stimulus per role, with a `dropped` column
    vectors: dict[str, np.ndarray]       # vectors of the kept stimuli per role
    kept: dict[str, pl.DataFrame]
    unbalanced: dict[str, tuple[pl.DataFrame, np.ndarray]] = None  # X and Y with vectors, before balancing


def prepare(con, test: TestDef, enc: Encoder, opts: Options, sets: dict[str, pl.DataFrame] | None = None,
            encode: bool = True) -> Prepared:
    """Select the sets, encode what is missing (unless the caller did), read the vectors back,
    drop stimuli without a vector, and balance the targets."""
    sets = sets if sets is not None else catalog.fetch_sets(con, test)
    every = embeddings.stimuli_of(sets.values())
    if encode:
        embeddings.encode_missing(con, enc, every)
    all_vectors, all_notes = embeddings.load(con, enc, every)  # one read for the four sets
    frames, kept, vectors = {}, {}, {}
    start = 0
    for role in ROLES:
        f = sets[role].with_row_index("ordinal_in_set")
        matrix, notes = all_vectors[start:start + f.height], all_notes[start:start + f.height]
        start += f.height
        ok = np.isfinite(matrix).all(axis=1)
        reasons = [None if k else f"oov: {n}" for k, n in zip(ok, notes)]
        frames[role] = f.with_columns(dropped=pl.Series(reasons, dtype=pl.String))
        kept[role], vectors[role] = f.filter(pl.Series(ok)), matrix[ok]
        if kept[role].height == 0:
            raise StimkitError(f"test {test.name!r}, encoder {enc.spec!r}: no stimulus of set {role.upper()} has a vector "
                               f"(first: {notes[0]})")
    unbalanced = {r: (kept[r], vectors[r]) for r in ("x", "y")}
    policy = opts.for_test(test)
    kept["x"], kept["y"], vectors["x"], vectors["y"] = cut(unbalanced, policy, opts.cut_seed, test.name)
    for role in ("x", "y"):
        gone = set(unbalanced[role][0]["ordinal_in_set"].to_list()) - set(kept[role]["ordinal_in_set"].to_list())
        if gone:
            frames[role] = frames[role].with_columns(
                dropped=pl.when(pl.col("ordinal_in_set").is_in(list(gone))).then(pl.lit("balanced")).otherwise(pl.col("dropped")))
    return Prepared(frames, vectors, kept, unbalanced)


def refuse_early(test: TestDef, sets: dict[str, pl.DataFrame], opts: Options) -> None:
    """What the selected stimuli alone show to be meaningless, refused before anything is
    encoded or written (the rest is checked on the vectors: stats.check_inputs)."""
    from math import comb

    policy = opts.for_test(test)
    x, y = sets["x"], sets["y"]
    for role, f in (("X", x), ("Y", y)):
        if f.height < 2:
            raise stats.InvalidInput(f"set {role} has {f.height} item; d needs at least 2 per target set "
                                     "(with 1 a side |d| = sqrt(2) whatever the data)")
    if sorted(x["stimulus"].to_list()) == sorted(y["stimulus"].to_list()):
        raise stats.InvalidInput("X and Y hold the same items: there is nothing to compare")
    if opts.method == "exact":
        n_x, n_y = (x.height, y.height) if policy == "none" else (min(x.height, y.height),) * 2
        if opts.clustered:
            n_x, n_y = x["word"].n_unique(), y["word"].n_unique()
        stats.check_exact(comb(n_x + n_y, n_x))


def cut(unbalanced: dict, policy: str, cut_seed: int, test_name: str):
    """X and Y (frames and vectors) after the balance policy; the cut depends on the test,
    its set versions and the cut seed only."""
    (fx, vx), (fy, vy) = unbalanced["x"], unbalanced["y"]
    b = catalog.balance(fx.with_row_index("_k"), fy.with_row_index("_k"), policy, cut_seed, test_name)
    return b.x.drop("_k"), b.y.drop("_k"), vx[b.x["_k"].to_numpy()], vy[b.y["_k"].to_numpy()]


def compute(prep: Prepared, opts: Options, test_name: str, fingerprint: str, enc_spec: str = "") -> dict:
    X, Y, A, B = (prep.vectors[r] for r in ROLES)
    what = f"test {test_name!r}, encoder {enc_spec or fingerprint!r}"
    stats.check_inputs(X, Y, A, B, what)
    s = stats.association(np.concatenate([X, Y]), A, B)
    sx, sy = s[: len(X)], s[len(X):]
    stats.check_associations(sx, sy, what)
    rng = rng_for(opts.seed, test_name, fingerprint, "permutation")
    groups, n_groups_x = word_groups(prep) if opts.clustered else (None, 0)
    if opts.clustered:
        pv = stats.clustered_p(s, groups, n_groups_x, opts.alternative, opts.budget, rng, opts.method)
    else:
        pv = stats.permutation_p(s, len(X), opts.alternative, opts.method, opts.budget, rng)
    ci = (None, None)
    if opts.bootstrap:  # resampling attributes needs every cosine
        W = stats.unit_rows(np.concatenate([X, Y]))
        sim_a, sim_b = W @ stats.unit_rows(A).T, W @ stats.unit_rows(B).T
        ci = stats.bootstrap_d(sim_a, sim_b, len(X), opts.bootstrap, rng_for(opts.seed, test_name, fingerprint, "bootstrap"),
                               opts.ci_level, opts.ddof, groups)
    equal = len(X) == len(Y)
    return {
        "statistic": stats.test_statistic(sx, sy) if equal else float(sx.mean() - sy.mean()),
        "statistic_kind": "sum difference" if equal else "mean difference",
        "effect_size": stats.effect_size(sx, sy, opts.ddof),
        "p_value": pv.p, "p_method": pv.method, "samples": pv.samples, "min_p": pv.min_p,
        "log10_partitions": log10(pv.partitions),
        "association": s, "ci_low": ci[0], "ci_high": ci[1],
    }


def cut_spread(prep: Prepared, opts: Options, test_name: str, fingerprint: str, policy: str, enc_spec: str = "") -> list[dict]:
    """The test over `opts.cuts` independent cuts (cut seeds cut_seed, cut_seed + 1, ...):
    cut 0 is the single-cut result. s(w) does not depend on the cut, so it is computed once."""
    (fx, vx), (fy, vy) = prep.unbalanced["x"], prep.unbalanced["y"]
    A, B = prep.vectors["a"], prep.vectors["b"]
    sx_all, sy_all = stats.association(vx, A, B), stats.association(vy, A, B)
    rows = []
    for i in range(opts.cuts):
        seed = opts.cut_seed + i
        b = catalog.balance(fx.with_row_index("_k"), fy.with_row_index("_k"), policy, seed, test_name)
        sx, sy = sx_all[b.x["_k"].to_numpy()], sy_all[b.y["_k"].to_numpy()]
        stats.check_associations(sx, sy, f"test {test_name!r}, encoder {enc_spec or fingerprint!r}, cut {i}")
        s = np.concatenate([sx, sy])
        if opts.clustered:
            groups, n_gx = word_groups_of(b.x["word"].to_list(), b.y["word"].to_list())
            pv = stats.clustered_p(s, groups, n_gx, opts.alternative, opts.budget,
                                   rng_for(opts.seed, test_name, fingerprint, "permutation", "cut", seed), opts.method)
        else:
            pv = stats.permutation_p(s, len(sx), opts.alternative, opts.method, opts.budget,
                                     rng_for(opts.seed, test_name, fingerprint, "permutation", "cut", seed))
        rows.append({"cut": i, "cut_seed": seed, "effect_size": stats.effect_size(sx, sy, opts.ddof),
                     "p_value": pv.p, "p_method": pv.method, "rejected": pv.p <= opts.alpha})
    return rows


def word_groups(prep: Prepared) -> tuple[np.ndarray, int]:
    return word_groups_of(prep.kept["x"]["word"].to_list(), prep.kept["y"]["word"].to_list())


def word_groups_of(x_words: list[str], y_words: list[str]) -> tuple[np.ndarray, int]:
    """A word id per target stimulus (X's words first), and how many words X has."""
    xs, ys = list(dict.fromkeys(x_words)), list(dict.fromkeys(y_words))
    ids = {("x", w): i for i, w in enumerate(xs)} | {("y", w): len(xs) + i for i, w in enumerate(ys)}
    return np.array([ids[("x", w)] for w in x_words] + [ids[("y", w)] for w in y_words]), len(xs)


def run_one(con, run_id: str, test: TestDef, enc: Encoder, opts: Options, sets=None, encode: bool = True,
            prep: Prepared | None = None) -> dict:
    """Prepare (unless the caller did), compute, and write one result with its items."""
    started = time.perf_counter()
    prep = prep if prep is not None else prepare(con, test, enc, opts, sets, encode)
    out = compute(prep, opts, test.name, enc.fingerprint, enc.spec)
    policy = opts.for_test(test)
    cuts = cut_spread(prep, opts, test.name, enc.fingerprint, policy, enc.spec) if opts.cuts > 1 and n_cut(prep) else []
    context = test.context if test.context == "c-word" else ("token" if enc.uses_span else test.context)
    result_id = f"{run_id}/{test.name}/{enc.fingerprint}"
    versions = sorted({v for f in prep.kept.values() if "set_version" in f.columns for v in f["set_version"].unique().to_list()})
    row = {
        "result_id": result_id, "run_id": run_id, "test": test.name, "test_source": test.source, "family": test.family,
        # c-word: the encoder as named (its fingerprint is the token variant's)
        "encoder": getattr(enc, "base_spec", enc.spec), "model": enc.name, "fingerprint": enc.fingerprint, "context": context,
        "x_sql": test.sql("x"), "y_sql": test.sql("y"), "a_sql": test.sql("a"), "b_sql": test.sql("b"),
        "set_versions": versions,
        "n_x": prep.kept["x"].height, "n_y": prep.kept["y"].height, "n_a": prep.kept["a"].height, "n_b": prep.kept["b"].height,
        "n_dropped_oov": sum(int(f["dropped"].str.starts_with("oov").sum()) for f in prep.frames.values()),
        "balance": policy, "cut_seed": opts.cut_seed if policy != "none" else None,
        "n_balanced_away": sum(int((f["dropped"] == "balanced").sum()) for f in prep.frames.values()),
        "statistic": out["statistic"], "effect_size": out["effect_size"], "ddof": opts.ddof,
        "p_value": out["p_value"], "p_method": out["p_method"], "budget": opts.budget, "samples": out["samples"],
        "min_p": out["min_p"], "statistic_kind": out["statistic_kind"],
        "log10_partitions": out["log10_partitions"], "alternative": opts.alternative, "seed": opts.seed,
        "clustered": opts.clustered, "ci_low": out["ci_low"], "ci_high": out["ci_high"],
        "ci_level": opts.ci_level if opts.bootstrap else None, "bootstrap": opts.bootstrap or None,
        # which sampler drew the partitions: same seed and sampler, same p-value
        "options": json.dumps({**asdict(opts), "sampler": sampler.NAME}), "stimkit_version": __version__,
        **spread_columns(cuts, opts.alpha),
        "seconds": time.perf_counter() - started,
    }
    write(con, row, _items(result_id, prep, out["association"]), [{"result_id": result_id, **c} for c in cuts])
    return row


def n_cut(prep: Prepared) -> int:
    """How many target items balancing removed (0: the targets were already equal)."""
    return sum(prep.unbalanced[r][0].height - prep.kept[r].height for r in ("x", "y"))


def spread_columns(cuts: list[dict], alpha: float) -> dict:
    if not cuts:
        return {}
    d, p = np.array([c["effect_size"] for c in cuts]), np.array([c["p_value"] for c in cuts])
    return {"cuts": len(cuts), "cut_d_min": float(d.min()), "cut_d_median": float(np.median(d)), "cut_d_max": float(d.max()),
            "cut_p_min": float(p.min()), "cut_p_median": float(np.median(p)), "cut_p_max": float(p.max()),
            "cut_reject_share": float((p <= alpha).mean()), "cut_alpha": alpha}


def write(con, row: dict, items: pa.Table, cuts: list[dict] = ()) -> None:
    """Insert one result, its items and its cuts (the caller owns the transaction)."""
    cols = list(row)
    con.execute(f"INSERT INTO results ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols])
    if cuts:
        keys = list(cuts[0])
        con.executemany(f"INSERT INTO result_cuts ({', '.join(keys)}) VALUES ({', '.join('?' * len(keys))})",
                        [[c[k] for k in keys] for c in cuts])
    con.register("_items", items)
    try:
        con.execute("INSERT INTO result_items SELECT * FROM _items")
    finally:
        con.unregister("_items")


def _items(result_id: str, prep: Prepared, association: np.ndarray) -> pa.Table:
    """One row per selected stimulus: its role, its s(w, A, B) if it took part, or why it was dropped."""
    scores = {"x": association[: prep.kept["x"].height], "y": association[prep.kept["x"].height:]}
    parts = []
    for role in ROLES:
        f = prep.frames[role]
        s = np.full(f.height, np.nan)
        if role in scores:
            s[prep.kept[role]["ordinal_in_set"].to_numpy()] = scores[role]
        col = lambda name: f[name] if name in f.columns else pl.Series([None] * f.height, dtype=pl.String)  # noqa: E731
        parts.append(pl.DataFrame({
            "result_id": [result_id] * f.height, "role": [role.upper()] * f.height,
            "ordinal": f["ordinal_in_set"].cast(pl.Int32), "set_version": col("set_version").cast(pl.String),
            "stimulus": f["stimulus"], "word": col("word").cast(pl.String), "template_id": col("template_id").cast(pl.String),
            "association": pl.Series(s).fill_nan(None), "dropped": f["dropped"],
        }))
    return pl.concat(parts).to_arrow()


@dataclass
class Failure:
    test: str      # '*' when a whole encoder failed
    encoder: str   # '*' when a test failed for every encoder
    cause: str

    def __str__(self) -> str:
        return f"test {self.test}, encoder {self.encoder}: {self.cause}"


@dataclass
class RunReport:
    run_id: str | None
    rows: list[dict]
    failures: list[Failure]
    alpha: float
    n_tests: int = 0
    n_encoders: int = 0

    @property
    def cannot_reject(self) -> list[dict]:
        """Results whose smallest possible p is above alpha: they could never reject."""
        return [r for r in self.rows if r["min_p"] is not None and r["min_p"] > self.alpha]


# What one test can fail with and leave the others running.
EXPECTED_FAILURES = (StimkitError, ValueError, ArithmeticError, MemoryError)


def run_tests(con, tests: list[TestDef], encoder_specs: list[str], opts: Options, command: str,
              encode=None, on_result=None, on_failure=None) -> RunReport:
    """Every test on every encoder, in one run. A test or encoder that fails is reported
    (on_failure) and skipped; the others run and are stored. Each test's stimuli are
    selected once and each encoder encodes what is missing once.

    encode(con, enc, stimuli) -> encode report: how to encode (the CLI shows progress).
    on_result(row, done, total): called after each stored result."""
    opts.validate()
    failures: list[Failure] = []

    def fail(test, enc, e):
        cause = str(e).splitlines()[0] if str(e) else type(e).__name__
        cause = re.sub(r"^test '[^']*'(, encoder '[^']*')?: ", "", cause)  # the failure line names them already
        f = Failure(test, enc, cause)
        failures.append(f)
        if on_failure:
            on_failure(f)

    encs = []
    for spec in encoder_specs:
        try:
            encs.append(encoders.resolve(spec))
        except EXPECTED_FAILURES as e:
            fail("*", spec, e)
    sets = {}
    for t in tests:
        try:
            fetched = catalog.fetch_sets(con, t)
            refuse_early(t, fetched, opts)
            sets[t.name] = fetched
        except EXPECTED_FAILURES as e:
            fail(t.name, "*", e)
    if any(t.context == "c-word" for t in tests) and sets:
        from . import cword
        try:  # c-word: each encoder's token variant, once every word is known to fall on a token
            encs = cword.encoders_for([t for t in tests if t.name in sets], encs, sets)
        except EXPECTED_FAILURES as e:
            fail("*", ", ".join(x.spec for x in encs), e)
            encs = []
    every = embeddings.stimuli_of(f for s in sets.values() for f in s.values()) if sets else None
    ready = []
    for enc in encs:
        try:
            if every is not None:
                (encode or embeddings.encode_missing)(con, enc, every)
            ready.append(enc)
        except EXPECTED_FAILURES as e:
            fail("*", enc.spec, e)
    runnable = [t for t in tests if t.name in sets]
    total, rows = len(runnable) * len(ready), []
    if not total:
        return RunReport(None, rows, failures, opts.alpha, len(tests), len(encoder_specs))
    with store.transaction(con):  # a crash leaves no partial run; a failed test leaves no partial result
        run_id = start_run(con, command, opts.seed)
        for enc in ready:
            for test in runnable:
                try:
                    row = run_one(con, run_id, test, enc, opts, sets[test.name], encode=False)
                except EXPECTED_FAILURES as e:
                    fail(test.name, enc.spec, e)
                    continue
                rows.append(row)
                if on_result:
                    on_result(row, len(rows) + len(failures), total)
        if not rows:
            con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
            run_id = None
    return RunReport(run_id, rows, failures, opts.alpha, len(tests), len(encoder_specs))
