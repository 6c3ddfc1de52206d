"""Generalized pivotal quantities with a small, stated Monte Carlo error (pure functions).

A generalized confidence interval (Weerahandi 1993) is a quantile of a pivot such as

    delta* = (D - Z S*) / sigma*

where D is an observed difference, Z ~ N(0, 1), and S* and sigma* are functions of
independent chi-square draws (one per mean square). Its quantiles have no closed form: they
are a Monte Carlo integral, so an interval from N plain pseudo-random draws moves with the
seed by about sqrt(q (1-q) / N) / density at its ends (0.01 in d at 10,000 draws). Two
things make that error small here:

- Z is integrated out exactly (Rao-Blackwellisation): given the chi-square draws, delta* is
  normal, so P(delta* <= x) = mean_i Phi((x sigma*_i - D) / S*_i), a smooth function of x whose
  root at each level is found by bisection (`quantiles`), and the generalized p-value of D is
  mean_i Phi(-D / S*_i) (`p_greater`).
- the chi-square draws are randomised quasi-Monte Carlo: a scrambled Sobol sequence (scipy.
  stats.qmc) mapped through the chi-square quantile function, so its points fill the unit cube
  evenly; the seed picks the scramble (`chi2_draws`).

`bench/bench_crossed.py` prints what is left (the spread of the ends over seeds).
"""

from __future__ import annotations

import numpy as np

# Sobol points per interval: 2^12. The ends move by a few 1e-4 in d with the seed (bench).
DEFAULT_DRAWS = 2 ** 12


def chi2_draws(dfs, n: int, rng: np.random.Generator) -> np.ndarray:
    """(len(dfs), n') chi-square draws, row k with dfs[k] degrees of freedom (any positive
    real), from a scrambled Sobol sequence seeded by rng; n' is n rounded up to a power of 2."""
    from scipy import special
    from scipy.stats import qmc

    dfs = np.asarray(dfs, dtype=np.float64)
    m = max(int(np.ceil(np.log2(max(n, 2)))), 1)
    u = qmc.Sobol(len(dfs), scramble=True, seed=rng).random_base2(m).T
    u = np.clip(u, 1e-12, 1 - 1e-12)  # a scrambled point never lies on the cube's faces, but be sure
    return 2 * special.gammaincinv(dfs[:, None] / 2, u)


def cdf(x: float, diff: float, se: np.ndarray, sigma: np.ndarray) -> float:
    """P(delta* <= x), delta* = (diff - Z se) / sigma, averaged over the draws (se, sigma)."""
    from scipy import special

    return float(np.mean(special.ndtr((x * sigma - diff) / se)))


def quantiles(diff: float, se: np.ndarray, sigma: np.ndarray, probs) -> np.ndarray:
    """The quantiles of delta* = (diff - Z se) / sigma over the draws of (se, sigma), Z
    integrated out: the roots of cdf(x) = p, to 1e-9 in x. The root lies between the
    smallest and the largest of the draws' own p-quantiles (diff + z_p se_i) / sigma_i: cdf is
    their mixture."""
    from scipy import optimize, special

    out = []
    for p in probs:
        own = (diff + special.ndtri(p) * se) / sigma
        lo, hi = float(np.min(own)), float(np.max(own))
        out.append(lo if hi - lo < 1e-12 else
                   optimize.brentq(lambda x: cdf(x, diff, se, sigma) - p, lo, hi, xtol=1e-10, rtol=1e-12, maxiter=1000))
    return np.array(out)


def p_greater(diff: float, se: np.ndarray) -> float:
    """The generalized p-value of diff against 'greater': P(diff - Z se <= 0) over the draws."""
    from scipy import special

    return float(np.mean(special.ndtr(-diff / se)))


def p_value(diff: float, se: np.ndarray, alternative: str) -> float:
    """The generalized p-value for an alternative (greater | less | two-sided)."""
    if alternative == "greater":
        return p_greater(diff, se)
    if alternative == "less":
        return p_greater(-diff, se)
    return min(1.0, 2 * min(p_greater(diff, se), p_greater(-diff, se)))
