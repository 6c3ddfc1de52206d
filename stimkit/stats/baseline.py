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
Y items; their p-values are the permutation core's own (pvalues.permutation_p and
clustered_p with K columns: the same partitions for every column, their sums for all K at
once from an indicator matrix of the partitions times the (N x K) score matrix).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .decision import significant


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
    return float(significant(p, alpha).mean()) if p.size else float("nan")


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
