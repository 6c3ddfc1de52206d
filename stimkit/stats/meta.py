"""Random-effects meta-analysis across templates (DerSimonian & Laird 1986), pure functions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def d_variance(d: np.ndarray, n1: np.ndarray, n2: np.ndarray) -> np.ndarray:
    """Large-sample variance of a standardised mean difference (Hedges & Olkin 1985):
    (n1 + n2) / (n1 n2) + d^2 / (2 (n1 + n2))."""
    d, n1, n2 = (np.asarray(a, dtype=float) for a in (d, n1, n2))
    return (n1 + n2) / (n1 * n2) + d ** 2 / (2 * (n1 + n2))


@dataclass(frozen=True)
class Pooled:
    k: int            # number of templates
    d: float          # random-effects pooled d
    se: float
    ci_low: float
    ci_high: float
    pi_low: float     # prediction interval for a new template (Higgins et al. 2009); NaN for k < 3
    pi_high: float
    tau2: float       # between-template variance
    i2: float         # share of variation beyond sampling error, 0..1
    q: float          # Cochran's Q
    d_fixed: float    # fixed-effect (inverse-variance) pooled d


def dersimonian_laird(d: np.ndarray, v: np.ndarray, level: float = 0.95) -> Pooled:
    from scipy import stats as sps  # here: scipy.stats takes half a second to import
    d, v = np.asarray(d, dtype=float), np.asarray(v, dtype=float)
    k = len(d)
    if k < 2:
        raise ValueError("a meta-analysis needs at least two templates")
    w = 1 / v
    d_fixed = float(np.sum(w * d) / np.sum(w))
    q = float(np.sum(w * (d - d_fixed) ** 2))
    c = float(np.sum(w) - np.sum(w ** 2) / np.sum(w))
    tau2 = max(0.0, (q - (k - 1)) / c) if c > 0 else 0.0
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    w_star = 1 / (v + tau2)
    pooled = float(np.sum(w_star * d) / np.sum(w_star))
    se = float(np.sqrt(1 / np.sum(w_star)))
    z = sps.norm.ppf((1 + level) / 2)
    if k >= 3:
        half = sps.t.ppf((1 + level) / 2, k - 2) * np.sqrt(tau2 + se ** 2)
        pi = (pooled - half, pooled + half)
    else:
        pi = (float("nan"), float("nan"))
    return Pooled(k, pooled, se, pooled - z * se, pooled + z * se, float(pi[0]), float(pi[1]), tau2, i2, q, d_fixed)
