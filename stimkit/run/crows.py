"""The likelihood test over CrowS-Pairs (catalog.crows): every published scoring variant over one
token table, side by side.

The pairs' sentences are scored once by a scoring encoder (encoders.scoring) into the token
table (`token_scores`, db/030) and their alignment stored (`pair_tokens`, encoders.likelihood);
each variant is then a named SQL query over the same rows (queries/likelihood/):

    causal model
      sum        the sentence's log-probability, every token given those before it, the first
                 given BOS: lm-evaluation-harness's crows_pairs task (loglikelihood of each
                 choice with an empty context; pct_stereotype = sent_more's higher, ties lose)
      mean       that sum over the number of tokens: bias-bench's generative scoring (the
                 geometric mean of the token probabilities, a monotone function of it)
    masked model (pll)
      nangia     the tokens both sentences share (difflib over token ids, [CLS] and [SEP]
                 included as metric.py aligns them) masked one at a time, their log-probabilities
                 summed and rounded to 3 places: Nangia et al.'s metric.py (bert-base: 60.5)
      biasbench  the tokens that differ, masked one at a time, averaged, rounded to 3: bias-bench's
                 CrowSPairsRunner (bert-base: 60.81); a pair one of whose sentences has no
                 differing token is skipped, as bias-bench skips it
      aul        every token unmasked, their log-probabilities averaged: AUL (Kaneko & Bollegala 2022)
      pll        every token masked in turn, summed: the full pseudo-log-likelihood (Salazar et al. 2020)

The pairs are aligned as metric.py orders them (sent1, sent2): sent_more first for a stereo
pair, sent_less first for an antistereo one (difflib is not symmetric).

The decision of a pair is the same for all: sent_more scores higher (a win), lower, or the same
(neutral, after the variant's rounding). metric.py puts sent_more first for stereo pairs and
second for antistereo ones, then counts sent1 > sent2 for stereo and sent2 > sent1 for
antistereo: both are "sent_more higher", so one rule serves both directions, and its stereo and
antistereo scores are this rule within each direction (ties in the denominator, as its metric
score; metric.py's own direction scores leave the ties out of their denominators).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ..errors import UsageError
from ..seeding import rng_for
from ..stats import pairs as pair_stats



@dataclass(frozen=True)
class Variant:
    name: str
    kind: str            # causal | pll: the scoring encoder's kind it reads
    tool: str            # the published tool it reproduces
    decimals: int | None  # the tool's rounding before comparing


VARIANTS = (
    Variant("sum", "causal", "lm-evaluation-harness crows_pairs (pct_stereotype)", None),
    Variant("mean", "causal", "bias-bench (generative: mean token log-probability)", None),
    Variant("nangia", "pll", "Nangia et al. metric.py (shared tokens, sum)", 3),
    Variant("biasbench", "pll", "bias-bench CrowSPairsRunner (differing tokens, mean)", 3),
    Variant("aul", "pll", "AUL (Kaneko & Bollegala 2022: unmasked, mean)", None),
    Variant("pll", "pll", "full PLL (Salazar et al. 2020: every token masked, sum)", None),
)


def variants_for(kind: str) -> tuple[Variant, ...]:
    return tuple(v for v in VARIANTS if v.kind == kind)


@dataclass(frozen=True)
class CrowsRow:
    """One row of `crows_results` (db/031)."""
    run_id: str
    test: str
    version: str
    encoder: str
    fingerprint: str
    variant: str
    split: str
    tool: str
    n: int
    wins: int
    neutral: int
    skipped: int
    score: float | None
    ci_low: float | None
    ci_high: float | None
    resamples: int
    seed: int


def ordered(pairs: pl.DataFrame) -> list[tuple[str, str]]:
    """(sent1, sent2) of each pair as metric.py reads them: sent_more first for stereo pairs."""
    return [(m, s) if d == "stereo" else (s, m) for m, s, d in
            zip(pairs["sent_more"].to_list(), pairs["sent_less"].to_list(), pairs["stereo_antistereo"].to_list())]


def score_pairs(con, enc, variant: Variant, pairs: pl.DataFrame, pair_ids: list[str]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sent_more scores, sent_less scores, decisions) of every pair under one variant, read by
    its SQL (encoders.likelihood); NaN where the variant gives a side no score (a skipped pair)."""
    from ..encoders import likelihood

    frame = likelihood.pair_scores(con, enc.fingerprint, pair_ids, variant.name)
    got = {(p, int(side)): v for p, side, v in zip(frame["pair_id"].to_list(), frame["side"].to_list(),
                                                   frame["score"].to_list())}
    stereo = [d == "stereo" for d in pairs["stereo_antistereo"].to_list()]
    first = np.array([np.nan if got.get((p, 0)) is None else got[(p, 0)] for p in pair_ids], dtype=np.float64)
    second = np.array([np.nan if got.get((p, 1)) is None else got[(p, 1)] for p in pair_ids], dtype=np.float64)
    more = np.where(stereo, first, second)
    less = np.where(stereo, second, first)
    return more, less, pair_stats.decisions(more, less, variant.decimals)


def summarise(test: str, version: str, enc, variant: Variant, pairs: pl.DataFrame, decided: np.ndarray,
              seed: int, resamples: int, run_id: str) -> list[CrowsRow]:
    """The variant's rows: all pairs, each direction, each bias type."""
    labels = {"": pairs["stereo_antistereo"].to_numpy(), "bias": pairs["bias_type"].to_numpy()}
    rows = []
    for split, mask in pair_stats.splits(labels):
        rng = rng_for(seed, test, enc.fingerprint, variant.name, split, "crows")
        s = pair_stats.metric_score(decided[mask], resamples, rng)
        rows.append(CrowsRow(run_id, test, version, enc.spec, enc.fingerprint, variant.name, split, variant.tool,
                             s.n, s.wins, s.neutral, s.skipped, s.score, s.ci_low, s.ci_high, resamples, seed))
    return rows


def check_encoder(enc, test: str) -> str:
    from ..encoders import scoring

    if not scoring.is_scoring(enc):
        raise UsageError(f"test {test!r} is a likelihood test: it needs a scoring encoder (smollm2-135m, "
                         f"hf:PATH,score=causal or hf:PATH,score=pll), not {enc.spec!r}")
    return enc.score_kind


def texts_of(con, tests: list[str]) -> list[str]:
    """The sentences of the tests' pairs, once each (what a scoring encoder scores)."""
    from ..catalog import crows

    return list(dict.fromkeys(t for name in tests for c in ("sent_more", "sent_less")
                              for t in crows.pairs_of(con, name)[1][c].to_list()))


def run(con, tests: list[str], encoders: list, seed: int, command: str, resamples: int = pair_stats.RESAMPLES,
        run_fields: dict | None = None) -> tuple[str, list[CrowsRow]]:
    """Every variant of each scoring encoder's kind over the tests' pairs, whose sentences the
    token table holds already (Store.crows scores what it lacks first, the store released);
    the rows and per-pair scores stored with one run."""
    from .. import store
    from ..catalog import crows
    from ..encoders import likelihood

    loaded = [(name, *crows.pairs_of(con, name)) for name in tests]
    kinds = {enc.spec: check_encoder(enc, tests[0]) for enc in encoders}
    aligned = {(name, enc.fingerprint): likelihood.store_pairs(con, enc, ordered(pairs))
               for name, _, pairs in loaded for enc in encoders}
    results, per_pair = [], []
    with store.transaction(con):
        run_id = store.start_run(con, command, seed, **(run_fields or {}))
        for name, version, pairs in loaded:
            for enc in encoders:
                for variant in variants_for(kinds[enc.spec]):
                    more, less, decided = score_pairs(con, enc, variant, pairs, aligned[(name, enc.fingerprint)])
                    results += summarise(name, version, enc, variant, pairs, decided, seed, resamples, run_id)
                    skipped = decided == -2
                    per_pair.append(pl.DataFrame({
                        "run_id": run_id, "test": name, "fingerprint": enc.fingerprint, "variant": variant.name,
                        "ordinal": pairs["ordinal"],
                        "more_score": pl.Series(np.where(skipped, np.nan, more)).fill_nan(None),
                        "less_score": pl.Series(np.where(skipped, np.nan, less)).fill_nan(None),
                        "decision": pl.Series(decided.astype(np.float64)).replace(-2.0, None).cast(pl.Int32)}))
        store.insert(con, "crows_results", results)
        if per_pair:
            store.insert(con, "crows_pair_scores", pl.concat(per_pair, how="vertical_relaxed"))
    return run_id, results


COLUMNS = ("run_id", "test", "encoder", "variant", "split", "tool", "n", "wins", "neutral", "skipped", "score",
           "ci_low", "ci_high", "resamples", "seed")


def stored(con, run: str | None = None, test: str | None = None) -> pl.DataFrame:
    """Stored rows of `crows_results`: one run's (an id, or `latest`: the newest run that has
    any), else the latest run of each test x encoder (the view crows_latest); variants in the
    order of VARIANTS, splits as all, the directions, then bias types by name."""
    from .. import store

    cond, params = ["TRUE"], []
    if run == "latest":
        cond.append("run_id = (SELECT max(run_id) FROM crows_results)")
    elif run is not None:
        cond.append("run_id = ?")
        params.append(run)
    if test is not None:
        cond.append("test = ?")
        params.append(test)
    source = "crows_results" if run is not None else "crows_latest"
    order = " ".join(f"WHEN '{v.name}' THEN {i}" for i, v in enumerate(VARIANTS))
    df = store.frame(con, f"""
        SELECT {", ".join(COLUMNS)} FROM {source} WHERE {" AND ".join(cond)}
        ORDER BY test, encoder, CASE variant {order} END,
                 CASE WHEN split = 'all' THEN 0 WHEN split NOT LIKE 'bias:%' THEN 1 ELSE 2 END, split""", params)
    if run is not None and run != "latest" and df.height == 0:
        raise UsageError(f"no CrowS results of run {run!r}")
    return df
