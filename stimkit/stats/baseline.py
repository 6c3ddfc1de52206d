"""Matched random baselines: the d and p that K random target pairs give under a test's own
procedure, as pure functions over arrays, vectorised across the pairs (no loop per pair).

A test's permutation null says "the targets are exchangeable", not "no social bias": random
target words that differ from each other in frequency alone reach |d| > 0.8 on GloVe a
quarter of the time (spec/STATISTICS.md, "Confounds"). Drawing K pairs of random target sets,
each word matched to a target word on frequency and subword count, and running them through
the same procedure gives:

- the observed d's percentile among the K random d (`percentile`),
- the share of random pairs the procedure rejects at alpha: its empirical false-positive
  rate on this encoder (`rejection_rate`),
- d of X against its own matched random set, and of Y against its own: which side carries
  the effect.

Arrays: a column per drawn pair. SX (n_x, K) and SY (n_y, K) are the s(w) of the drawn X and
Y items; p-values reuse the permutation core's rules (pvalues: exact when C(N, n) <= budget,
else sampled with the observed partition counted once; the same tie tolerance and minimum
p), with every partition's sums for all K columns at once: an indicator matrix of the
partitions times the (N x K) score matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, islice
from math import comb
from typing import Callable

import numpy as np

from .pvalues import _exceeds, check_exact, check_method, min_p
from .weat import InvalidInput

# Elements of an indicator chunk or a (rows x K) block of sums held at once (float64: 32 MB).
_CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class ManyP:
    """One permutation p per column (drawn pair), all from one procedure."""
    p: np.ndarray           # (K,)
    method: str             # exact | sampled | parametric, with the scheme's label (-clustered)
    samples: int            # partitions enumerated or drawn per column (the observed one included when sampled)
    partitions: int         # C(N, n)
    min_p: float | None     # the smallest p the procedure can give


def effect_sizes(SX: np.ndarray, SY: np.ndarray, ddof: int = 1) -> np.ndarray:
    """Caliskan's d of every column: (mean SX - mean SY) / std over both (ddof), (K,)."""
    SX, SY = np.asarray(SX, dtype=np.float64), np.asarray(SY, dtype=np.float64)
    pooled = np.concatenate([SX, SY])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (SX.mean(axis=0) - SY.mean(axis=0)) / pooled.std(axis=0, ddof=ddof)


def percentile(observed: float, draws: np.ndarray) -> float:
    """The observed value's percentile among the draws, mid-rank (ties count half), in [0, 100]."""
    draws = np.asarray(draws, dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    if draws.size == 0 or not np.isfinite(observed):
        return float("nan")
    return float(100.0 * ((draws < observed).sum() + 0.5 * (draws == observed).sum()) / draws.size)


def monte_carlo_p(observed: float, draws: np.ndarray) -> float:
    """Two-sided p of the observed value against K draws from its null, the observed counted
    among them: 2 min((1 + #{d_k <= d}), (1 + #{d_k >= d})) / (K + 1), at most 1. Never below
    2 / (K + 1): alpha = 0.01 needs K >= 199."""
    draws = np.asarray(draws, dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    low, high = 1 + (draws <= observed).sum(), 1 + (draws >= observed).sum()
    return float(min(1.0, 2 * min(low, high) / (draws.size + 1)))


def rejection_rate(p: np.ndarray, alpha: float) -> float:
    """The share of drawn pairs with p <= alpha: the procedure's empirical false-positive rate."""
    p = np.asarray(p, dtype=np.float64)
    p = p[np.isfinite(p)]
    return float((p <= alpha).mean()) if p.size else float("nan")


# ----------------------------------------------------------------------------- partitions

def _rows_per_chunk(width: int) -> int:
    return max(1, _CHUNK_ELEMENTS // max(1, width))


def exact_indicators(N: int, k: int, width: int):
    """Every k-subset of range(N) in itertools.combinations order, as 0/1 rows of (c, N)
    float64 chunks (c bounded so that c x width stays small)."""
    it = combinations(range(N), k)
    rows = _rows_per_chunk(max(N, width))
    while True:
        flat = np.fromiter((i for c in islice(it, rows) for i in c), dtype=np.int64)
        if flat.size == 0:
            return
        idx = flat.reshape(-1, k)
        ind = np.zeros((len(idx), N))
        ind[np.arange(len(idx))[:, None], idx] = 1.0
        yield ind


def random_indicators(N: int, k: int, total: int, width: int, rng: np.random.Generator):
    """`total` independent uniform random k-subsets of range(N), as 0/1 rows of chunks: the k
    smallest of N uniform keys (argpartition) are a uniform k-subset."""
    rows = _rows_per_chunk(max(N, width))
    done = 0
    while done < total:
        c = min(rows, total - done)
        idx = np.argpartition(rng.random((c, N)), k - 1, axis=1)[:, :k] if k < N else np.tile(np.arange(N), (c, 1))
        ind = np.zeros((c, N))
        ind[np.arange(c)[:, None], idx] = 1.0
        done += c
        yield ind


def subset_p_many(units: np.ndarray, k: int, statistic: Callable[[np.ndarray], np.ndarray], observed: np.ndarray,
                  center: np.ndarray, scale: np.ndarray, alternative: str, method: str, budget: int,
                  rng: np.random.Generator | None, label: str = "") -> ManyP:
    """pvalues.subset_p for K columns at once: the statistic of the first k units against every
    k-subset (exact) or budget - 1 uniform random ones with the observed counted once (sampled).

    units: (N, m) per-unit values; statistic: subset sums (rows, m) -> (rows, K)."""
    N = len(units)
    partitions = comb(N, k)
    if method == "auto":
        method = "exact" if partitions <= budget else "sampled"
    floor = min_p(partitions, method, budget, alternative, 2 * k == N)
    hits = np.zeros(len(observed), dtype=np.int64)
    if method == "exact":
        check_exact(partitions)
        for ind in exact_indicators(N, k, units.shape[1]):
            hits += _exceeds(statistic(ind @ units), observed, alternative, center, scale).sum(axis=0)
        return ManyP(hits / partitions, "exact" + label, partitions, partitions, floor)
    rng = rng if rng is not None else np.random.default_rng()
    for ind in random_indicators(N, k, budget - 1, units.shape[1], rng):
        hits += _exceeds(statistic(ind @ units), observed, alternative, center, scale).sum(axis=0)
    return ManyP((1 + hits) / budget, "sampled" + label, budget, partitions, floor)


def permutation_p_many(S: np.ndarray, n: int, alternative: str = "greater", method: str = "auto",
                       budget: int = 100_000, rng: np.random.Generator | None = None) -> ManyP:
    """pvalues.permutation_p of every column of S (N, K): items are the units, the first n
    rows are X, the statistic is the sum over X. parametric: a normal fit to each column's
    sampled statistic (Caliskan et al.'s replication code)."""
    check_method(method, alternative)
    S = np.asarray(S, dtype=np.float64)
    observed = S[:n].sum(axis=0)
    center = n * S.mean(axis=0)
    scale = np.abs(S).sum(axis=0)
    scale[scale == 0] = 1.0
    if method != "parametric":
        return subset_p_many(S, n, lambda sums: sums, observed, center, scale, alternative, method, budget, rng)
    rng = rng if rng is not None else np.random.default_rng()
    null = np.concatenate([ind @ S for ind in random_indicators(len(S), n, budget, S.shape[1], rng)])
    total = S.sum(axis=0)
    stat_null, stat = 2 * null - total, 2 * observed - total
    mu, sd = stat_null.mean(axis=0), stat_null.std(axis=0, ddof=1)
    from scipy import stats as sps  # here: scipy.stats costs half a second to import

    if alternative == "greater":
        p = sps.norm.sf(stat, mu, sd)
    elif alternative == "less":
        p = sps.norm.cdf(stat, mu, sd)
    else:
        p = 2 * sps.norm.sf(np.abs(stat - mu), 0, sd)
    return ManyP(np.minimum(p, 1.0), "parametric", budget, comb(len(S), n), None)


def clustered_p_many(S: np.ndarray, groups: np.ndarray, n_groups_x: int, alternative: str = "greater",
                     budget: int = 100_000, rng: np.random.Generator | None = None, method: str = "auto") -> ManyP:
    """pvalues.clustered_p of every column of S (N, K): whole words move with their sentences.
    groups: a word id per row (X's words 0..n_groups_x-1), the same for every column (the
    drawn words stand where the test's words stood, sentence for sentence)."""
    if method == "parametric":
        raise InvalidInput("clustered permutation has no 'parametric' form (use auto, exact or sampled)")
    check_method(method, alternative, ("auto", "exact", "sampled"))
    S = np.asarray(S, dtype=np.float64)
    K = S.shape[1]
    G = int(groups.max()) + 1
    per_group = np.zeros((G, K + 1))
    np.add.at(per_group, groups, np.column_stack([S, np.ones(len(S))]))
    total, count = per_group[:, :K].sum(axis=0), per_group[:, K].sum()

    def mean_diff(sums):
        sx, cx = sums[:, :K], sums[:, K:]
        return sx / cx - (total - sx) / (count - cx)

    observed = mean_diff(per_group[:n_groups_x].sum(axis=0, keepdims=True))[0]
    scale = np.abs(S).mean(axis=0)
    scale[scale == 0] = 1.0
    return subset_p_many(per_group, n_groups_x, mean_diff, observed, np.zeros(K), scale, alternative, method, budget,
                         rng, label="-clustered")


@dataclass(frozen=True)
class BaselineSummary:
    """What K matched random pairs say about an observed d."""
    k: int
    observed_d: float
    percentile: float          # the observed d among the random d, in [0, 100]
    fpr: float                 # share of random pairs with p <= alpha
    alpha: float
    d_median: float            # the random d
    d_low: float               # their 2.5% and 97.5% quantiles
    d_high: float
    d_x: float                 # median d of X against its own matched random set (> 0: X leans to A)
    d_y: float                 # median d of Y against its own (< 0: Y leans to B)


def summarize(observed_d: float, d: np.ndarray, p: np.ndarray, d_x: np.ndarray, d_y: np.ndarray,
              alpha: float) -> BaselineSummary:
    finite = d[np.isfinite(d)]
    low, mid, high = np.quantile(finite, [0.025, 0.5, 0.975]) if finite.size else (np.nan,) * 3
    return BaselineSummary(int(len(d)), float(observed_d), percentile(observed_d, d), rejection_rate(p, alpha),
                           float(alpha), float(mid), float(low), float(high), float(np.nanmedian(d_x)),
                           float(np.nanmedian(d_y)))
