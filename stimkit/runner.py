"""Run one association test for one encoder and write it to the results tables."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from math import lgamma, log

import numpy as np
import polars as pl
import pyarrow as pa

from . import StimkitError, __version__, catalog, embeddings, sampler, stats
from .catalog import ROLES, TestDef
from .encoders import Encoder
from .seeding import rng_for


@dataclass(frozen=True)
class Options:
    budget: int = stats.DEFAULT_BUDGET
    method: str = "auto"          # auto | exact | sampled | parametric
    alternative: str = "greater"
    seed: int = 0
    ddof: int = 1
    clustered: bool = False       # permute whole words (sentence tests)
    bootstrap: int = 0            # replicates for a CI of d; 0 = none
    ci_level: float = 0.95
    balance: str | None = None    # None: the test's own policy

    def validate(self):
        if self.method not in stats.METHODS:
            raise StimkitError(f"unknown p-value method {self.method!r} (known: {', '.join(stats.METHODS)})")
        if self.alternative not in stats.ALTERNATIVES:
            raise StimkitError(f"unknown alternative {self.alternative!r} (known: {', '.join(stats.ALTERNATIVES)})")
        if self.budget < 2:
            raise StimkitError("the sample budget must be at least 2")
        if self.balance is not None and self.balance not in catalog.BALANCE_POLICIES:
            raise StimkitError(f"unknown balance policy {self.balance!r} (known: {', '.join(catalog.BALANCE_POLICIES)})")


def start_run(con, command: str, seed: int) -> str:
    run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    con.execute("INSERT INTO runs (run_id, command, seed, stimkit_version) VALUES (?, ?, ?, ?)",
                [run_id, command, seed, __version__])
    return run_id


def log10_comb(n: int, k: int) -> float:
    return (lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)) / log(10)


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
    policy = opts.balance or test.balance
    kept["x"] = kept["x"].with_row_index("_k")
    kept["y"] = kept["y"].with_row_index("_k")
    b = catalog.balance(kept["x"], kept["y"], policy, opts.seed, test.name)
    for role, frame in (("x", b.x), ("y", b.y)):
        vectors[role] = vectors[role][frame["_k"].to_numpy()]
        gone = set(kept[role]["ordinal_in_set"].to_list()) - set(frame["ordinal_in_set"].to_list())
        if gone:
            frames[role] = frames[role].with_columns(
                dropped=pl.when(pl.col("ordinal_in_set").is_in(list(gone))).then(pl.lit("balanced")).otherwise(pl.col("dropped")))
        kept[role] = frame.drop("_k")
    return Prepared(frames, vectors, kept, unbalanced)


def compute(prep: Prepared, opts: Options, test_name: str, fingerprint: str) -> dict:
    X, Y, A, B = (prep.vectors[r] for r in ROLES)
    s = stats.association(np.concatenate([X, Y]), A, B)
    sx, sy = s[: len(X)], s[len(X):]
    rng = rng_for(opts.seed, test_name, fingerprint, "permutation")
    groups, n_groups_x = word_groups(prep) if opts.clustered else (None, 0)
    if opts.clustered:
        pv = stats.clustered_p(s, groups, n_groups_x, opts.alternative, opts.budget, rng)
        n_items, n_total = n_groups_x, int(groups.max()) + 1
    else:
        if len(X) != len(Y):
            raise StimkitError(f"test {test_name!r}: unequal target sizes after balancing ({len(X)} vs {len(Y)})")
        pv = stats.permutation_p(s, len(X), opts.alternative, opts.method, opts.budget, rng)
        n_items, n_total = len(X), len(X) + len(Y)
    ci = (None, None)
    if opts.bootstrap:  # resampling attributes needs every cosine
        W = stats.unit_rows(np.concatenate([X, Y]))
        sim_a, sim_b = W @ stats.unit_rows(A).T, W @ stats.unit_rows(B).T
        ci = stats.bootstrap_d(sim_a, sim_b, len(X), opts.bootstrap, rng_for(opts.seed, test_name, fingerprint, "bootstrap"),
                               opts.ci_level, opts.ddof, groups)
    return {
        "statistic": stats.test_statistic(sx, sy), "effect_size": stats.effect_size(sx, sy, opts.ddof),
        "p_value": pv.p, "p_method": pv.method, "samples": pv.samples,
        "log10_partitions": log10_comb(n_total, n_items), "association": s,
        "ci_low": ci[0], "ci_high": ci[1],
    }


def word_groups(prep: Prepared) -> tuple[np.ndarray, int]:
    """A word id per target stimulus (X's words first), and how many words X has."""
    x_words = list(dict.fromkeys(prep.kept["x"]["word"].to_list()))
    y_words = list(dict.fromkeys(prep.kept["y"]["word"].to_list()))
    ids = {("x", w): i for i, w in enumerate(x_words)} | {("y", w): len(x_words) + i for i, w in enumerate(y_words)}
    groups = [ids[("x", w)] for w in prep.kept["x"]["word"]] + [ids[("y", w)] for w in prep.kept["y"]["word"]]
    return np.array(groups), len(x_words)


def run_one(con, run_id: str, test: TestDef, enc: Encoder, opts: Options, sets=None, encode: bool = True,
            prep: Prepared | None = None) -> dict:
    """Prepare (unless the caller did), compute, and write one result with its items."""
    started = time.perf_counter()
    prep = prep if prep is not None else prepare(con, test, enc, opts, sets, encode)
    out = compute(prep, opts, test.name, enc.fingerprint)
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
        "balance": opts.balance or test.balance,
        "n_balanced_away": sum(int((f["dropped"] == "balanced").sum()) for f in prep.frames.values()),
        "statistic": out["statistic"], "effect_size": out["effect_size"], "ddof": opts.ddof,
        "p_value": out["p_value"], "p_method": out["p_method"], "budget": opts.budget, "samples": out["samples"],
        "log10_partitions": out["log10_partitions"], "alternative": opts.alternative, "seed": opts.seed,
        "clustered": opts.clustered, "ci_low": out["ci_low"], "ci_high": out["ci_high"],
        "ci_level": opts.ci_level if opts.bootstrap else None, "bootstrap": opts.bootstrap or None,
        # which sampler drew the partitions: same seed and sampler, same p-value
        "options": json.dumps({**asdict(opts), "sampler": sampler.NAME}), "stimkit_version": __version__,
        "seconds": time.perf_counter() - started,
    }
    write(con, row, _items(result_id, prep, out["association"]))
    return row


def write(con, row: dict, items: pa.Table) -> None:
    """Insert one result and its items (the caller owns the transaction: a run is all or nothing)."""
    cols = list(row)
    con.execute(f"INSERT INTO results ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols])
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
