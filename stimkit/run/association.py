"""One association test (WEAT / SEAT) on one encoder, from a planned test: read the vectors,
drop stimuli without one, balance the targets, compute d and p, and build its Result."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from math import log10

import numpy as np
import polars as pl

from .. import __version__, stats
from ..catalog.tests import ROLES
from ..encoders import Encoder
from ..encoders.embeddings import load, stimuli_of
from ..errors import InputError
from ..seeding import rng_for
from ..stats import sampler
from ..stats.intervals import effect_size_ci
from ..stimuli.balance import balance
from . import cword
from .options import Options
from .plan import PlannedTest
from .rows import CutRow, Result


@dataclass
class Prepared:
    """A test's four sets for one encoder: the stimuli, their vectors, and what was dropped."""
    frames: dict[str, pl.DataFrame]      # every selected stimulus per role, with a `dropped` column
    vectors: dict[str, np.ndarray]       # vectors of the kept stimuli per role
    kept: dict[str, pl.DataFrame]
    unbalanced: dict[str, tuple[pl.DataFrame, np.ndarray]]  # X and Y with vectors, before balancing
    policy: str

    @property
    def n_cut(self) -> int:
        """How many target items balancing removed (0: the targets were already equal)."""
        return sum(self.unbalanced[r][0].height - self.kept[r].height for r in ("x", "y"))


def prepare(con, planned: PlannedTest, enc: Encoder, opts: Options, reference: pl.DataFrame | None = None) -> Prepared:
    """Read the vectors of the planned sets (one read for the four), centre them if asked,
    drop stimuli without a vector, and balance the targets."""
    test, sets = planned.test, planned.sets
    all_vectors, all_notes = load(con, enc, stimuli_of(sets.values()))
    if opts.center is not None:  # before any cosine: the reference's mean (and top directions) removed
        from ..stats.centering import center, parse_method

        ref = all_vectors if reference is None else load(con, enc, stimuli_of([reference]))[0]
        all_vectors = center(all_vectors, ref, *parse_method(opts.center)).astype(np.float32)
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
            raise InputError(f"test {test.name!r}, encoder {enc.spec!r}: no stimulus of set {role.upper()} has a vector "
                             f"(first: {notes[0]})")
    unbalanced = {r: (kept[r], vectors[r]) for r in ("x", "y")}
    policy = opts.for_test(test)
    kept["x"], kept["y"], vectors["x"], vectors["y"] = cut(unbalanced, policy, opts.cut_seed, test.name)
    for role in ("x", "y"):
        gone = set(unbalanced[role][0]["ordinal_in_set"].to_list()) - set(kept[role]["ordinal_in_set"].to_list())
        if gone:
            frames[role] = frames[role].with_columns(
                dropped=pl.when(pl.col("ordinal_in_set").is_in(list(gone))).then(pl.lit("balanced")).otherwise(pl.col("dropped")))
    return Prepared(frames, vectors, kept, unbalanced, policy)


def cut(unbalanced: dict, policy: str, cut_seed: int, test_name: str):
    """X and Y (frames and vectors) after the balance policy; the cut depends on the test,
    its set versions and the cut seed only."""
    (fx, vx), (fy, vy) = unbalanced["x"], unbalanced["y"]
    b = balance(fx.with_row_index("_k"), fy.with_row_index("_k"), policy, cut_seed, test_name)
    return b.x.drop("_k"), b.y.drop("_k"), vx[b.x["_k"].to_numpy()], vy[b.y["_k"].to_numpy()]


def word_groups(kept: dict[str, pl.DataFrame]) -> tuple[np.ndarray, int]:
    return stats.group_ids(kept["x"]["word"].to_list(), kept["y"]["word"].to_list())


def compute(prep: Prepared, opts: Options, test_name: str, fingerprint: str, enc_spec: str = "") -> dict:
    X, Y, A, B = (prep.vectors[r] for r in ROLES)
    what = f"test {test_name!r}, encoder {enc_spec or fingerprint!r}"
    stats.check_inputs(X, Y, A, B, what)
    s = stats.association(np.concatenate([X, Y]), A, B)
    sx, sy = s[: len(X)], s[len(X):]
    stats.check_associations(sx, sy, what)
    rng = rng_for(opts.seed, test_name, fingerprint, "permutation")
    groups, n_groups_x = word_groups(prep.kept) if opts.clustered else (None, 0)
    if opts.clustered:
        pv = stats.clustered_p(s, groups, n_groups_x, opts.alternative, opts.budget, rng, opts.method)
    else:
        pv = stats.permutation_p(s, len(X), opts.alternative, opts.method, opts.budget, rng)
    # The interval of d, attributes fixed as in the permutation test: targets are the sampled
    # units, and in a sentence test a word with all its sentences is one unit (stats.intervals;
    # coverage measured in bench/bench_coverage.py). --bootstrap N: BCa over the same units.
    units = word_groups(prep.kept)[0] if "word" in prep.kept["x"].columns and "word" in prep.kept["y"].columns else None
    try:
        iv = effect_size_ci(sx, sy, opts.ci_level, units, "bootstrap-bca" if opts.bootstrap else "auto", opts.ddof,
                            rng_for(opts.seed, test_name, fingerprint, "interval"), n_resamples=opts.bootstrap or 9999)
    except stats.InvalidInput:  # no spread within X or Y: d's sampling error cannot be estimated
        iv = None
    equal = len(X) == len(Y)
    return {
        "statistic": stats.test_statistic(sx, sy) if equal else float(sx.mean() - sy.mean()),
        "statistic_kind": "sum difference" if equal else "mean difference",
        "effect_size": stats.effect_size(sx, sy, opts.ddof),
        "p_value": pv.p, "p_method": pv.method, "samples": pv.samples, "min_p": pv.min_p,
        "log10_partitions": log10(pv.partitions),
        "association": s, "ci": iv,
    }


def cut_spread(prep: Prepared, opts: Options, test_name: str, fingerprint: str, result_id: str,
               enc_spec: str = "") -> list[CutRow]:
    """The test over `opts.cuts` independent cuts (cut seeds cut_seed, cut_seed + 1, ...):
    cut 0 is the single-cut result. s(w) does not depend on the cut, so it is computed once."""
    (fx, vx), (fy, vy) = prep.unbalanced["x"], prep.unbalanced["y"]
    A, B = prep.vectors["a"], prep.vectors["b"]
    sx_all, sy_all = stats.association(vx, A, B), stats.association(vy, A, B)
    rows = []
    for i in range(opts.cuts):
        seed = opts.cut_seed + i
        b = balance(fx.with_row_index("_k"), fy.with_row_index("_k"), prep.policy, seed, test_name)
        sx, sy = sx_all[b.x["_k"].to_numpy()], sy_all[b.y["_k"].to_numpy()]
        stats.check_associations(sx, sy, f"test {test_name!r}, encoder {enc_spec or fingerprint!r}, cut {i}")
        s = np.concatenate([sx, sy])
        rng = rng_for(opts.seed, test_name, fingerprint, "permutation", "cut", seed)
        if opts.clustered:
            groups, n_gx = stats.group_ids(b.x["word"].to_list(), b.y["word"].to_list())
            pv = stats.clustered_p(s, groups, n_gx, opts.alternative, opts.budget, rng, opts.method)
        else:
            pv = stats.permutation_p(s, len(sx), opts.alternative, opts.method, opts.budget, rng)
        rows.append(CutRow(result_id, i, seed, stats.effect_size(sx, sy, opts.ddof), pv.p, pv.method, pv.p <= opts.alpha))
    return rows


def spread_columns(cuts: list[CutRow], alpha: float) -> dict:
    if not cuts:
        return {}
    d, p = np.array([c.effect_size for c in cuts]), np.array([c.p_value for c in cuts])
    return {"cuts": len(cuts), "cut_d_min": float(d.min()), "cut_d_median": float(np.median(d)), "cut_d_max": float(d.max()),
            "cut_p_min": float(p.min()), "cut_p_median": float(np.median(p)), "cut_p_max": float(p.max()),
            "cut_reject_share": float((p <= alpha).mean()), "cut_alpha": alpha}


def result(run_id: str, planned: PlannedTest, enc: Encoder, prep: Prepared, opts: Options, started: float,
           kind: str = "test") -> Result:
    """Compute the test on prepared vectors; the Result with its items and cuts."""
    test = planned.test
    out = compute(prep, opts, test.name, enc.fingerprint, enc.spec)
    result_id = f"{run_id}/{test.name}/{enc.fingerprint}"
    cuts = cut_spread(prep, opts, test.name, enc.fingerprint, result_id, enc.spec) if opts.cuts > 1 and prep.n_cut else []
    return Result(
        **described(result_id, run_id, planned, enc, prep, opts, started, kind),
        statistic=out["statistic"], statistic_kind=out["statistic_kind"], effect_size=out["effect_size"],
        p_value=out["p_value"], p_method=out["p_method"], samples=out["samples"],
        min_p=out["min_p"], log10_partitions=out["log10_partitions"],
        ci_low=out["ci"].low if out["ci"] else None, ci_high=out["ci"].high if out["ci"] else None,
        ci_level=opts.ci_level if out["ci"] else None, bootstrap=opts.bootstrap or None,
        ci_method=out["ci"].method if out["ci"] else None, ci_scheme=out["ci"].scheme if out["ci"] else None,
        **spread_columns(cuts, opts.alpha), items=items(result_id, prep, out["association"]), cut_rows=tuple(cuts),
    )


def described(result_id: str, run_id: str, planned: PlannedTest, enc: Encoder, prep: Prepared, opts: Options,
              started: float, kind: str) -> dict:
    """The columns every result of a prepared test shares, whatever its metric: what was
    tested, on what, with which options and stimuli."""
    test = planned.test
    return dict(
        result_id=result_id, run_id=run_id, test=test.name, test_source=test.source, family=test.family,
        encoder=getattr(enc, "base_spec", enc.spec), model=enc.name, fingerprint=enc.fingerprint,
        context=cword.label(test) if test.context == "c-word" else ("token" if enc.uses_span else test.context),
        x_sql=test.sql("x"), y_sql=test.sql("y"), a_sql=test.sql("a"), b_sql=test.sql("b"),
        set_versions=sorted({v for f in prep.kept.values() if "set_version" in f.columns
                             for v in f["set_version"].unique().to_list()}),
        n_x=prep.kept["x"].height, n_y=prep.kept["y"].height, n_a=prep.kept["a"].height, n_b=prep.kept["b"].height,
        n_dropped_oov=sum(int(f["dropped"].str.starts_with("oov").sum()) for f in prep.frames.values()),
        balance=prep.policy, cut_seed=opts.cut_seed if prep.policy != "none" else None,
        n_balanced_away=sum(int((f["dropped"] == "balanced").sum()) for f in prep.frames.values()),
        ddof=opts.ddof, budget=opts.budget, alternative=opts.alternative, seed=opts.seed, clustered=opts.clustered,
        # which sampler drew the partitions: same seed and sampler, same p-value
        options=json.dumps({**asdict(opts), "sampler": sampler.NAME}), stimkit_version=__version__,
        seconds=time.perf_counter() - started, kind=kind, display=getattr(enc, "_display", None),
        centering=opts.centering,
    )


def items(result_id: str, prep: Prepared, association: np.ndarray) -> pl.DataFrame:
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
    return pl.concat(parts)


def run_one(con, run_id: str, planned: PlannedTest, enc: Encoder, opts: Options, kind: str = "test",
            reference: pl.DataFrame | None = None) -> list[Result]:
    """Prepare once, then compute and store a result per metric (WEAT's with its items and
    cuts). The caller owns the transaction."""
    started = time.perf_counter()
    prep = prepare(con, planned, enc, opts, reference)
    found = [result(run_id, planned, enc, prep, opts, started, kind) if name == "weat"
             else metric_result(run_id, planned, enc, prep, opts, name, started, kind) for name in opts.metrics]
    write(con, found)  # one append per table for all the metrics: ten results cost one insert, not ten
    return found


def metric_result(run_id: str, planned: PlannedTest, enc: Encoder, prep: Prepared, opts: Options, name: str,
                  started: float, kind: str = "test") -> Result:
    """One association metric other than WEAT (stats.metrics) on the balanced sets: its value,
    and a permutation p over the same partitions of X u Y where the metric has such a null."""
    from ..stats import metrics

    test, spec = planned.test, metrics.metric(name)
    X, Y, A, B = (prep.vectors[r] for r in ROLES)
    value = metrics.compute(name, X, Y, A, B, rng_for(opts.seed, test.name, enc.fingerprint, "metric", name))
    reason = spec.null_reason
    if spec.has_permutation_null and opts.clustered:
        reason = "no clustered permutation form for this metric"
    elif spec.has_permutation_null and opts.method == "parametric":
        reason = "no parametric form for this metric"
    pv = None
    if reason is None:
        pv = metrics.metric_p(name, X, Y, A, B, metrics.bias_alternative(name, opts.alternative), opts.method,
                              opts.budget, rng_for(opts.seed, test.name, enc.fingerprint, "metric-p", name))
    result_id = f"{run_id}/{test.name}/{enc.fingerprint}/{name}"
    return Result(
        **described(result_id, run_id, planned, enc, prep, opts, started, kind),
        statistic=value, statistic_kind=f"{name} ({spec.kind})", effect_size=None,
        p_value=pv.p if pv else None, p_method=pv.method if pv else None,
        samples=pv.samples if pv else 0, min_p=pv.min_p if pv else None,
        log10_partitions=log10(pv.partitions) if pv else None,
        ci_low=None, ci_high=None, ci_level=None, bootstrap=None,
        metric=name, p_null_reason=reason, items=None, cut_rows=(),
    )


def write(con, results: Result | list[Result]) -> None:
    from ..store import insert

    results = results if isinstance(results, list) else [results]
    insert(con, "results", results)
    insert(con, "result_cuts", [c for res in results for c in res.cut_rows])
    for res in results:
        if res.items is not None:
            insert(con, "result_items", res.items)
