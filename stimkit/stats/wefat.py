"""WEFAT statistics (Caliskan et al. 2017, "Methods: WEFAT") as pure functions.

For target words W with a real property p_w and attribute sets A, B:

    s(w, A, B) = (mean_a cos(w, a) - mean_b cos(w, b)) / std_{x in A u B} cos(w, x)   (ddof = 1)

and the null hypothesis "no association between s(w) and p_w" is tested by regressing
p_w on s(w): Pearson r with its t-test p-value (as scipy.stats.pearsonr), Spearman rho,
slope and intercept with t-based CIs. A and B may differ in size.

Per-word p-value: over the partitions of A u B into sets of sizes |A| and |B|,
Pr[s(w, A_i, B_i) >= s(w, A, B)]. The std over A u B is the same for every partition,
so the statistic orders partitions as the sum over A_i of cos(w, x) / std does, and the
WEAT machinery (pvalues.permutation_p: exact or sampled) applies unchanged.

Sentence context (a word with several stimuli, e.g. one per template): s(w) is the mean
over the word's sentences t of s(t, A, B), each attribute sentence an element of A or B.
That mean is mean_{A} v - mean_{B} v with v_x = mean_t cos(t, x) / std_t, so the per-word
permutation runs over v; attribute words move whole, with all their sentences
(pvalues.clustered_p), as the sentences of one word are not independent.
"""

from __future__ import annotations

import numpy as np

from .. import DEFAULT_BUDGET
from .pvalues import PValue, clustered_p, permutation_p
from .weat import InvalidInput, unit_rows


def normalized_cosines(T: np.ndarray, A: np.ndarray, B: np.ndarray, word_of: np.ndarray | None = None,
                       ddof: int = 1) -> np.ndarray:
    """v[w, x] = mean over w's stimuli t of cos(t, x) / std_{A u B} cos(t, .), x over A then B.

    T: target stimulus vectors; word_of: the word index of each row of T (None: one row per word)."""
    C = unit_rows(T) @ unit_rows(np.concatenate([A, B])).T
    C = C / C.std(axis=1, ddof=ddof, keepdims=True)
    if word_of is None:
        return C
    n_words = int(word_of.max()) + 1
    sums = np.zeros((n_words, C.shape[1]))
    np.add.at(sums, word_of, C)
    return sums / np.bincount(word_of, minlength=n_words)[:, None]


def association_of(v: np.ndarray, n_a: int) -> np.ndarray:
    """s(w, A, B) from normalized cosines (A's columns first)."""
    return v[:, :n_a].mean(axis=1) - v[:, n_a:].mean(axis=1)


def association(W: np.ndarray, A: np.ndarray, B: np.ndarray, ddof: int = 1) -> np.ndarray:
    """s(w, A, B) for every row w of W."""
    return association_of(normalized_cosines(W, A, B, ddof=ddof), len(A))


def word_p_values(v: np.ndarray, n_a: int, rngs: list[np.random.Generator], method: str = "auto",
                  budget: int = DEFAULT_BUDGET, attr_groups: np.ndarray | None = None,
                  n_groups_a: int = 0) -> list[PValue]:
    """Per word: Pr[s(w, A_i, B_i) >= s(w, A, B)] over partitions of A u B (|A_i| = |A|).

    attr_groups: an attribute-word id per column of v (A's words 0..n_groups_a-1): whole
    words move between A_i and B_i."""
    if attr_groups is None:
        return [permutation_p(row, n_a, "greater", method, budget, rng) for row, rng in zip(v, rngs)]
    return [clustered_p(row, attr_groups, n_groups_a, "greater", budget, rng) for row, rng in zip(v, rngs)]


def regression(s: np.ndarray, prop: np.ndarray, level: float = 0.95) -> dict:
    """Pearson r (two-sided p as scipy.stats.pearsonr), Spearman rho, and the least-squares
    line prop = intercept + slope * s with t-based CIs at `level`."""
    from scipy import stats as sps  # here: scipy.stats takes half a second to import
    n = len(s)
    pr, sr, lr = sps.pearsonr(s, prop), sps.spearmanr(s, prop), sps.linregress(s, prop)
    t = sps.t.ppf((1 + level) / 2, n - 2)
    return {
        "r": float(pr.statistic), "p_value": float(pr.pvalue),
        "rho": float(sr.statistic), "rho_p_value": float(sr.pvalue),
        "slope": float(lr.slope), "slope_ci_low": float(lr.slope - t * lr.stderr), "slope_ci_high": float(lr.slope + t * lr.stderr),
        "intercept": float(lr.intercept), "intercept_ci_low": float(lr.intercept - t * lr.intercept_stderr),
        "intercept_ci_high": float(lr.intercept + t * lr.intercept_stderr),
    }


def bootstrap_r(s: np.ndarray, prop: np.ndarray, reps: int, rng: np.random.Generator,
                level: float = 0.95) -> tuple[float, float]:
    """Percentile CI of Pearson r, resampling (s, p) pairs with replacement."""
    idx = rng.integers(len(s), size=(reps, len(s)))
    x, y = s[idx], prop[idx]
    x, y = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a resample of one repeated pair has no r
        r = (x * y).sum(axis=1) / np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    lo, hi = np.nanquantile(r, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def least_typical(W: np.ndarray, fraction: float) -> np.ndarray:
    """Indices of the round(fraction * n) rows farthest from the targets' centroid (the
    paper's name-likeness filter). Distance is cosine distance to the mean unit vector,
    the geometry s(w) is measured in; ties keep the earlier row."""
    if not 0 <= fraction < 1:
        raise InvalidInput(f"--drop-least-typical must be in [0, 1), got {fraction}")
    k = int(np.floor(fraction * len(W) + 0.5))
    if k == 0:
        return np.array([], dtype=int)
    U = unit_rows(W)
    distance = 1 - U @ unit_rows(U.mean(axis=0, keepdims=True))[0]
    return np.sort(np.argsort(-distance, kind="stable")[:k])
