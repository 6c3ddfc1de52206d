"""One association test (WEAT / SEAT) on one encoder, from a planned test: read the vectors,
drop stimuli without one, balance the targets, compute d and p, and build its Result."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import asdict, dataclass, replace
from math import log10

import numpy as np
import polars as pl

from .. import __version__, stats
from ..catalog.definitions import ROLES
from ..encoders import Encoder
from ..encoders.embeddings import load, stimuli_of
from ..errors import InputError
from ..seeding import rng_for
from ..stats import sampler
from ..stats.decision import significant
from ..stats.intervals import effect_size_ci
from ..stimuli.balance import balance
from . import crossed, cword
from .options import Options
from .plan import PlannedTest
from .rows import CutRow, Generalisation, Identity, Inference, InfluenceRow, Interval, Provenance, Result, Robustness, Sets

# The leave-one-word-out p's (stats.influence) are there to decide at alpha, not to report a
# p near 1e-5: exact where the result's own test enumerates, else sampled from 2,000
# partitions and, where that p lies near alpha, from this many (or 100 / alpha for a small
# alpha; never more than the result's own budget). At alpha 0.01 the Monte Carlo error of a p
# near alpha is then 0.001 (a tenth of alpha); measured cost: docs/methods/influence.md.
INFLUENCE_BUDGET = 10_000
# The context of a test run on a scoring encoder (encoders.scoring): its likelihood form, the
# minimal pairs of its targets (run.likelihood)
MINIMAL_PAIRS = "minimal-pairs"


@dataclass
class Prepared:
    """A test's four sets for one encoder: the stimuli, their vectors, and what was dropped."""
    frames: dict[str, pl.DataFrame]      # every selected stimulus per role, with a `dropped` column
    vectors: dict[str, np.ndarray]       # vectors of the kept stimuli per role
    kept: dict[str, pl.DataFrame]
    unbalanced: dict[str, tuple[pl.DataFrame, np.ndarray]]  # X and Y with vectors, before balancing
    policy: str

    @functools.cached_property
    def n_shared_vectors(self) -> int:
        """Stimuli whose vector another word's stimulus has too: the encoder cannot tell them apart
        (computed once: every metric's result of the test carries it)."""
        units = [u for r in ROLES for u in self.kept[r]["word" if "word" in self.kept[r].columns else "stimulus"]]
        return stats.shared_vectors(np.concatenate([self.vectors[r] for r in ROLES]), units)

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


def words_of(frame: pl.DataFrame) -> list:
    """The word each stimulus belongs to; a stimulus without one (a set given as SQL without
    words) is its own unit."""
    if "word" not in frame.columns:
        return frame["stimulus"].to_list()
    return frame["word"].fill_null(frame["stimulus"]).to_list()


def word_groups(kept: dict[str, pl.DataFrame]) -> tuple[np.ndarray, int]:
    return stats.group_ids(words_of(kept["x"]), words_of(kept["y"]))


def permutation_units(prep: Prepared, opts: Options) -> tuple[np.ndarray | None, int]:
    """What the permutation moves: whole words (a group id per item, and X's number of words)
    when the options say so, else single items (None). One decision, read by the test and
    by its matched random baseline (run.baseline), so both run the same procedure."""
    return word_groups(prep.kept) if opts.clustered else (None, 0)


def unit_p(s: np.ndarray, n_x: int, units: tuple[np.ndarray | None, int], opts: Options, rng,
           return_null: bool = False) -> stats.PValue:
    """The permutation p of the associations `s` (X's n_x first) over `units`, as
    permutation_units gives them: whole words moved together, or single items (whose sampled
    null distribution comes back with return_null)."""
    groups, n_groups_x = units
    if groups is not None:
        return stats.clustered_p(s, groups, n_groups_x, opts.alternative, opts.budget, rng, opts.method)
    return stats.permutation_p(s, n_x, opts.alternative, opts.method, opts.budget, rng, return_null=return_null)


def context_of(test, enc: Encoder) -> str:
    """A result's context: c-word (and its slot), token for an encoder that reads spans, else the test's own."""
    if getattr(enc, "scores", False):  # a language model scores the targets' minimal pairs (run.likelihood)
        return MINIMAL_PAIRS
    return cword.label(test) if test.context == "c-word" else ("token" if enc.uses_span else test.context)


def result_key(planned: PlannedTest, enc: Encoder, opts: Options, kind: str = "test") -> str | None:
    """The hash of everything a (test, encoder) pair's results are computed from: the test's
    definition (its sets by role, context, slot), the versions selected for each role, the
    encoder's fingerprint, the resolved procedure, the sampler and stimkit's version. A study's
    run reuses stored results with today's key (execute). None where an input is outside the
    key (a centring reference set): never reused."""
    if opts.center is not None:
        return None
    test = replace(planned.test, source="")  # where its definition lies is provenance, not input
    # the display name is no input of a number, but the stored row carries it (tables head by it)
    payload = [repr(test), planned.role_versions, enc.fingerprint, getattr(enc, "_display", None),
               context_of(planned.test, enc),
               json.dumps(key_options(opts), sort_keys=True, default=str), kind, sampler.NAME, __version__]
    if planned.restricted is not None:  # a replicate family's shared words (run.replicates): other stimuli
        payload.append(planned.restricted)
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:24]


def key_options(opts: Options) -> dict:
    """The options as a result's key reads them: a likelihood test's variant by its SQL (a study's
    own file edited is another input; where it lies is not); an embedding's options as before."""
    values = asdict(opts)
    values.pop("variant_folders")
    name = values.pop("variant")
    if name is not None:
        values["variant"] = [name, opts.scoring_variant().sql]
    return values


def set_versions_of(prep: Prepared) -> list[str]:
    """The set versions behind the stimuli a prepared test kept."""
    return sorted({v for f in prep.kept.values() if "set_version" in f.columns for v in f["set_version"].unique().to_list()})


def compute(prep: Prepared, opts: Options, test_name: str, fingerprint: str, enc_spec: str = "") -> dict:
    """d, p (over the test's units and over words), and the interval of d of a prepared test."""
    moved = permutation_units(prep, opts)
    # Words for the p with whole words as units and for the interval: the permuted words, else
    # each stimulus' word; in a set without words (SQL) each stimulus is its own unit.
    words = moved if moved[0] is not None else word_groups(prep.kept)
    has_words = "word" in prep.kept["x"].columns and "word" in prep.kept["y"].columns
    return statistics(*(prep.vectors[r] for r in ROLES), opts, f"test {test_name!r}, encoder {enc_spec or fingerprint!r}",
                      lambda: rng_for(opts.seed, test_name, fingerprint, "permutation"),
                      rng_for(opts.seed, test_name, fingerprint, "interval"), moved, words, has_words)


def statistics(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray, opts: Options, what: str, rng,
               interval_rng, moved: tuple[np.ndarray | None, int] = (None, 0),
               words: tuple[np.ndarray, int] | None = None, word_interval: bool = False,
               return_null: bool = False) -> dict:
    """One WEAT / SEAT on vectors: what `stimkit test` computes for a prepared test, and
    `stimkit.weat` for vectors a user gives (each item its own unit: moved (None, 0), words None).

    rng: a function giving the permutation stream afresh (each p from its start); moved: the
    permutation units (word ids and X's number of words, or None: single items); words: each
    item's word, for the p with whole words as units (None: each item its own word) and, with
    word_interval, the interval's units; return_null: the sampled null of the statistic."""
    stats.check_inputs(X, Y, A, B, what)
    s = stats.association(np.concatenate([X, Y]), A, B)
    return from_associations(s[: len(X)], s[len(X):], opts, what, rng, interval_rng, moved, words, word_interval,
                             return_null)


def from_associations(sx: np.ndarray, sy: np.ndarray, opts: Options, what: str, rng, interval_rng,
                      moved: tuple[np.ndarray | None, int] = (None, 0), words: tuple[np.ndarray, int] | None = None,
                      word_interval: bool = False, return_null: bool = False) -> dict:
    """`statistics` from each target item's score (s(w, A, B), or a likelihood test's log P:
    run.likelihood): d, the p over the units moved and over words, and the interval of d."""
    stats.check_associations(sx, sy, what)
    s = np.concatenate([sx, sy])
    pv = unit_p(s, len(sx), moved, opts, rng(), return_null)
    # The p with whole words as units, whatever this result's units: the same number a
    # word-unit run gives (the same stream). Where each word has one stimulus it is this p.
    groups, n_groups_x = words if words is not None else (None, 0)
    if moved[0] is not None or groups is None or len(np.unique(groups)) == len(groups):
        pw = pv
    else:
        pw = stats.clustered_p(s, groups, n_groups_x, opts.alternative, opts.budget, rng(),
                               "auto" if opts.method == "parametric" else opts.method)
    # The interval of d, attributes fixed as in the permutation test: targets are the sampled
    # units, and in a sentence test a word with all its sentences is one unit (stats.intervals;
    # coverage measured in bench/bench_coverage.py). --bootstrap N: BCa over the same units.
    try:
        iv = effect_size_ci(sx, sy, opts.ci_level, groups if word_interval else None,
                            "bootstrap-bca" if opts.bootstrap else "auto", opts.ddof, interval_rng,
                            n_resamples=opts.bootstrap or 9999)
    except stats.InvalidInput:  # no spread within X or Y: d's sampling error cannot be estimated
        iv = None
    equal = len(sx) == len(sy)
    null = None
    if pv.null is not None:  # subset sums of X's associations -> the statistic
        total = float(s.sum())
        null = 2 * pv.null - total if equal else pv.null / len(sx) - (total - pv.null) / len(sy)
    return {
        "statistic": stats.test_statistic(sx, sy) if equal else float(sx.mean() - sy.mean()),
        "statistic_kind": "sum difference" if equal else "mean difference",
        "effect_size": stats.effect_size(sx, sy, opts.ddof),
        "p_value": pv.p, "p_method": pv.method, "samples": pv.samples, "min_p": pv.min_p,
        "partitions": pv.partitions, "log10_partitions": log10(pv.partitions),
        "p_words": pw.p, "p_words_method": pw.method, "p_words_min": pw.min_p,
        "association": s, "ci": iv, "null": null,
    }


def influence(prep: Prepared, opts: Options, test_name: str, fingerprint: str, result_id: str,
              d: float, p: float) -> tuple[list[InfluenceRow], dict]:
    """d and p with each target and attribute word left out (stats.influence, the result's own
    procedure with the influence budget), and the Result's columns naming the word that moves
    its decision at opts.alpha (the one moving d most where several do), else the one moving d most."""
    from ..stats.influence import word_influence

    W = stats.unit_rows(np.concatenate([prep.vectors["x"], prep.vectors["y"]]))
    A, B = stats.unit_rows(prep.vectors["a"]), stats.unit_rows(prep.vectors["b"])
    sample_budget = min(opts.budget, max(INFLUENCE_BUDGET, int(np.ceil(100 / opts.alpha))))
    found = word_influence(W @ A.T, W @ B.T, len(W) - len(prep.vectors["y"]), *(words_of(prep.kept[r]) for r in ROLES),
                           opts.ddof, alternative=opts.alternative, method=opts.method, budget=opts.budget,
                           sample_budget=sample_budget,
                           rng=rng_for(opts.seed, test_name, fingerprint, "influence"), word_units=opts.clustered,
                           alpha=opts.alpha)
    decided = significant(p, opts.alpha)
    flips = np.isfinite(found.p) & (significant(found.p, opts.alpha) != decided)
    rows = [InfluenceRow(result_id, role, word, int(n), _finite(dw), _finite(pw), method,
                         None if not np.isfinite(pw) else bool(flip), _finite(se))
            for role, word, n, dw, pw, method, flip, se in zip(found.role, found.word, found.n_stimuli, found.d, found.p,
                                                               found.p_method, flips, found.p_se)]
    shift = np.where(np.isfinite(found.d), np.abs(found.d - d), -1.0)
    if not len(found) or shift.max() < 0:
        return rows, {"fragile": bool(flips.any()), "influence_alpha": opts.alpha}
    i = int(np.argmax(np.where(flips, shift, -1.0))) if flips.any() else int(np.argmax(shift))
    return rows, {"influential_word": found.word[i], "influential_role": found.role[i],
                  "influential_d": _finite(found.d[i]), "influential_p": _finite(found.p[i]),
                  "fragile": bool(flips.any()), "influence_alpha": opts.alpha}


def _finite(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


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
        units = stats.group_ids(words_of(b.x), words_of(b.y)) if opts.clustered else (None, 0)
        pv = unit_p(s, len(sx), units, opts, rng)
        rows.append(CutRow(result_id, i, seed, stats.effect_size(sx, sy, opts.ddof), pv.p, pv.method, significant(pv.p, opts.alpha)))
    return rows


def spread_columns(cuts: list[CutRow], alpha: float) -> dict:
    if not cuts:
        return {}
    d, p = np.array([c.effect_size for c in cuts]), np.array([c.p_value for c in cuts])
    return {"cuts": len(cuts), "cut_d_min": float(d.min()), "cut_d_median": float(np.median(d)), "cut_d_max": float(d.max()),
            "cut_p_min": float(p.min()), "cut_p_median": float(np.median(p)), "cut_p_max": float(p.max()),
            "cut_reject_share": float(significant(p, alpha).mean()), "cut_alpha": alpha}


def result(run_id: str, planned: PlannedTest, enc: Encoder, prep: Prepared, opts: Options, started: float,
           kind: str = "test") -> Result:
    """Compute the test on prepared vectors; the Result with its items and cuts."""
    test = planned.test
    out = compute(prep, opts, test.name, enc.fingerprint, enc.spec)
    result_id = f"{run_id}/{test.name}/{enc.fingerprint}"
    cuts = cut_spread(prep, opts, test.name, enc.fingerprint, result_id, enc.spec) if opts.cuts > 1 and prep.n_cut else []
    influence_rows, influential = influence(prep, opts, test.name, enc.fingerprint, result_id, out["effect_size"],
                                            out["p_value"])
    iv = out["ci"]
    return Result(
        identity=identity_of(result_id, run_id, planned, enc, kind),
        sets=sets_of(planned, prep, opts, items(result_id, prep, out["association"])),
        inference=inference_of(opts, statistic=out["statistic"], statistic_kind=out["statistic_kind"],
                            effect_size=out["effect_size"], p_value=out["p_value"], p_method=out["p_method"],
                            samples=out["samples"], min_p=out["min_p"], log10_partitions=out["log10_partitions"]),
        interval=(Interval(iv.low, iv.high, opts.ci_level, opts.bootstrap or None, iv.method, iv.scheme) if iv
                  else Interval(bootstrap=opts.bootstrap or None)),
        generalisation=Generalisation(p_words=out["p_words"], p_words_method=out["p_words_method"],
                                      p_words_min=out["p_words_min"],
                                      **crossed.columns(prep, out["association"], opts, test.name, enc.fingerprint)),
        robustness=Robustness(**spread_columns(cuts, opts.alpha), **influential, cut_rows=tuple(cuts),
                              influence=tuple(influence_rows)),
        provenance=provenance_of(opts, started, result_key(planned, enc, opts, kind)),
    )


# The parts every result of a prepared test shares, whatever its metric: what was tested, on
# what, with which stimuli, options and procedure.

def identity_of(result_id: str, run_id: str, planned: PlannedTest, enc: Encoder, kind: str, metric: str = "weat") -> Identity:
    test = planned.test
    return Identity(result_id, run_id, test.name, test.source, test.paper_test, getattr(enc, "base_spec", enc.spec), enc.name,
                    enc.fingerprint, context_of(test, enc), kind=kind, metric=metric, display=getattr(enc, "_display", None),
                    language=planned.language, pair_key=test.pair)


def sets_of(planned: PlannedTest, prep: Prepared, opts: Options, items: pl.DataFrame | None = None) -> Sets:
    test = planned.test
    return Sets(
        x_sql=test.sql("x"), y_sql=test.sql("y"), a_sql=test.sql("a"), b_sql=test.sql("b"),
        set_versions=set_versions_of(prep),
        n_x=prep.kept["x"].height, n_y=prep.kept["y"].height, n_a=prep.kept["a"].height, n_b=prep.kept["b"].height,
        n_dropped_oov=sum(int(f["dropped"].str.starts_with("oov").sum()) for f in prep.frames.values()),
        balance=prep.policy, cut_seed=opts.cut_seed if prep.policy != "none" else None,
        n_balanced_away=sum(int((f["dropped"] == "balanced").sum()) for f in prep.frames.values()),
        n_shared_vectors=prep.n_shared_vectors, word_lists=test.word_lists(), role_versions=planned.role_versions,
        items=items)


def inference_of(opts: Options, **found) -> Inference:
    """The statistic and p `found`, with the options that decide them."""
    return Inference(ddof=opts.ddof, budget=opts.budget, alternative=opts.alternative, seed=opts.seed, units=opts.units,
                     centering=opts.centering, **found)


def provenance_of(opts: Options, started: float, input_key: str | None = None) -> Provenance:
    # which sampler drew the partitions: same seed and sampler, same p-value
    return Provenance(json.dumps({**asdict(opts), "sampler": sampler.NAME}), __version__, time.perf_counter() - started,
                      opts.clustered, input_key)


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
            reference: pl.DataFrame | None = None, pending: list[Result] | None = None) -> list[Result]:
    """Prepare once, then compute and store a result per metric (WEAT's with its items and
    cuts). The caller owns the transaction. pending: the results are added to it instead,
    for the caller to `write` with the run's others in one append per table."""
    from dataclasses import replace

    from . import diagnose

    started = time.perf_counter()
    prep = prepare(con, planned, enc, opts, reference)
    language = diagnose.wordfreq_language(planned.language)
    profiles = diagnose.profiles(prep, enc, planned.name, language)  # X's and Y's words: frequency, length, reliability
    found = [result(run_id, planned, enc, prep, opts, started, kind) if name == "weat"
             else metric_result(run_id, planned, enc, prep, opts, name, started, kind) for name in opts.metrics]
    found = [replace(res, robustness=replace(res.robustness, diagnostics=diagnose.rows(res.result_id, profiles, language)))
             for res in found]
    if pending is None:
        write(con, found)  # one append per table for all the metrics: ten results cost one insert, not ten
    else:
        pending.extend(found)
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
        reason = "no permutation form with words as units for this metric (--units sentences gives one over sentences)"
    elif spec.has_permutation_null and opts.method == "parametric":
        reason = "no parametric form for this metric"
    pv = None
    if reason is None:
        pv = metrics.metric_p(name, X, Y, A, B, metrics.bias_alternative(name, opts.alternative), opts.method,
                              opts.budget, rng_for(opts.seed, test.name, enc.fingerprint, "metric-p", name))
    result_id = f"{run_id}/{test.name}/{enc.fingerprint}/{name}"
    return Result(
        identity=identity_of(result_id, run_id, planned, enc, kind, metric=name), sets=sets_of(planned, prep, opts),
        inference=inference_of(opts, statistic=value, statistic_kind=f"{name} ({spec.kind})", effect_size=None,
                            p_value=pv.p if pv else None, p_method=pv.method if pv else None,
                            samples=pv.samples if pv else 0, min_p=pv.min_p if pv else None,
                            log10_partitions=log10(pv.partitions) if pv else None, p_null_reason=reason),
        provenance=provenance_of(opts, started, result_key(planned, enc, opts, kind)),
    )


def write(con, results: Result | list[Result]) -> None:
    from ..store import insert

    results = results if isinstance(results, list) else [results]
    insert(con, "results", [res.row() for res in results])
    insert(con, "result_cuts", [c for res in results for c in res.robustness.cut_rows])
    insert(con, "result_influence", [i for res in results for i in res.robustness.influence])
    items = [res.sets.items for res in results if res.sets.items is not None]
    if items:
        insert(con, "result_items", pl.concat(items))
    pairs = [res.sets.pairs for res in results if res.sets.pairs is not None]
    if pairs:  # a likelihood test's minimal pairs (run.likelihood)
        insert(con, "result_pairs", pl.concat(pairs))
    insert(con, "result_diagnostics", [d for res in results for d in res.robustness.diagnostics])
