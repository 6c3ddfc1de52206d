"""WEAT / SEAT statistics as pure functions over arrays (Caliskan et al. 2017; May et al. 2019, appendix A).

Notation: X, Y targets, A, B attributes, rows are vectors.

    s(w, A, B)   = mean_a cos(w, a) - mean_b cos(w, b)            association
    s(X, Y, A, B) = sum_x s(x) - sum_y s(y)                         test statistic
    d            = (mean_x s(x) - mean_y s(y)) / std_{X u Y} s(w)   effect size (ddof recorded)

p-values are over equal-size partitions (X_i, Y_i) of X u Y, with the non-strict
inequality of May et al. (appendix A). Because sum_{X u Y} s(w) is fixed, ordering
partitions by sum_{X_i} s(w) orders them exactly as the full statistic does, so the
null distribution is the distribution of a random n-subset sum of the s(w) values.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, islice
from math import comb

import numpy as np

from ..errors import InputError
from . import sampler

from .. import DEFAULT_BUDGET  # noqa: E402,F401  (re-exported: stats.DEFAULT_BUDGET)
ALTERNATIVES = ("greater", "less", "two-sided")
METHODS = ("auto", "exact", "sampled", "parametric")
# Two partition sums closer than this (relative to the scale of the values) are a tie:
# the same multiset of values summed in another order differs in the last bits.
_TIE_RTOL = 1e-11


# Exact enumeration beyond this many partitions takes minutes: sample instead.
EXACT_LIMIT = 5_000_000
_EXACT_CHUNK = 200_000   # partitions enumerated at a time: memory stays bounded


class InvalidInput(InputError):
    """Inputs on which the statistics have no meaning (the message names test and encoder)."""


def check_inputs(X, Y, A, B, what: str = "test") -> None:
    """Refuse inputs on which s(w) or d has no meaning, before computing anything."""
    for name, m in (("X", X), ("Y", Y), ("A", A), ("B", B)):
        m = np.asarray(m)
        if m.ndim != 2 or m.shape[0] == 0:
            raise InvalidInput(f"{what}: set {name} must be a non-empty 2-d array of vectors, got shape {m.shape}")
        if not np.isfinite(m).all():
            raise InvalidInput(f"{what}: set {name} holds NaN or infinite values")
        zero = np.flatnonzero(np.linalg.norm(m, axis=1) == 0)
        if zero.size:
            raise InvalidInput(f"{what}: set {name} item {int(zero[0])} is a zero vector (cosine undefined)")
    dims = {np.asarray(m).shape[1] for m in (X, Y, A, B)}
    if len(dims) > 1:
        raise InvalidInput(f"{what}: the sets have vectors of different sizes {sorted(dims)}")
    for name, m in (("X", X), ("Y", Y)):
        if len(m) < 2:
            raise InvalidInput(f"{what}: set {name} has {len(m)} item; d needs at least 2 per target set "
                               "(with 1 a side |d| = sqrt(2) whatever the data)")
    if _rows(X) == _rows(Y):
        raise InvalidInput(f"{what}: X and Y hold the same items: there is nothing to compare")


def _rows(m) -> set:
    m = np.ascontiguousarray(m, dtype=np.float64)
    return {r.tobytes() for r in m}


def check_associations(sx: np.ndarray, sy: np.ndarray, what: str = "test") -> None:
    if np.std(np.concatenate([sx, sy])) == 0:
        raise InvalidInput(f"{what}: every target has the same association s(w): d is undefined (0/0)")


def unit_rows(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def association(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """s(w, A, B) for every row w of W.

    mean_a cos(w, a) = w/|w| . mean_a a/|a|: one product with the difference of the mean
    unit attribute vectors instead of a |W| x (|A| + |B|) table of cosines."""
    return unit_rows(W) @ (unit_rows(A).mean(axis=0) - unit_rows(B).mean(axis=0))


def test_statistic(sx: np.ndarray, sy: np.ndarray) -> float:
    return float(np.sum(sx) - np.sum(sy))


def effect_size(sx: np.ndarray, sy: np.ndarray, ddof: int = 1) -> float:
    """Caliskan's d; ddof=1 as Caliskan et al. and May et al. (WEFE uses ddof=0)."""
    pooled = np.concatenate([sx, sy])
    return float((np.mean(sx) - np.mean(sy)) / np.std(pooled, ddof=ddof))


# --------------------------------------------------------------------------- partitions

def all_subsets(N: int, k: int) -> np.ndarray:
    """Every k-subset of range(N) as rows of a (C(N, k), k) index array."""
    count = comb(N, k)
    flat = np.fromiter((i for c in combinations(range(N), k) for i in c), dtype=np.int32, count=count * k)
    return flat.reshape(count, k)


def exact_subset_sums(values: np.ndarray, k: int) -> np.ndarray:
    """Sum of `values` over every k-subset (values may be (N,) or (N, m))."""
    idx = all_subsets(len(values), k)
    return values[idx].sum(axis=1)


def subset_sum_chunks(values: np.ndarray, k: int, chunk: int = _EXACT_CHUNK):
    """exact_subset_sums in chunks of `chunk` subsets, so memory stays bounded."""
    it = combinations(range(len(values)), k)
    while True:
        flat = np.fromiter((i for c in islice(it, chunk) for i in c), dtype=np.int32)
        if flat.size == 0:
            return
        yield values[flat.reshape(-1, k)].sum(axis=1)


def check_exact(partitions: int, what: str = "") -> None:
    if partitions > EXACT_LIMIT:
        raise InvalidInput(f"{what + ': ' if what else ''}exact enumeration of {partitions:,} partitions is over the limit "
                           f"({EXACT_LIMIT:,}): use --method sampled (or auto)")


def min_p(partitions: int, method: str, budget: int, alternative: str, symmetric: bool) -> float | None:
    """The smallest p-value the procedure can produce: 1/C exact (2/C two-sided when each
    partition's mirror image counts too), 1/budget sampled, none for the normal fit."""
    if method.startswith("exact"):
        return min(1.0, (2 if alternative == "two-sided" and symmetric else 1) / partitions)
    if method.startswith("sampled"):
        return 1.0 / budget
    return None


# --------------------------------------------------------------------------- p-values

@dataclass(frozen=True)
class PValue:
    p: float
    method: str        # exact | sampled | parametric
    samples: int       # partitions enumerated or drawn (observed one included when sampled)
    partitions: int    # C(N, n): how many partitions into the two sizes exist
    min_p: float | None = None  # the smallest p this procedure can give
    null: np.ndarray | None = None  # the drawn subset sums (sampled or parametric), when asked for


def _exceeds(null: np.ndarray, observed: float, alternative: str, center: float, scale: float) -> np.ndarray:
    tol = _TIE_RTOL * scale
    if alternative == "greater":
        return null >= observed - tol
    if alternative == "less":
        return null <= observed + tol
    return np.abs(null - center) >= abs(observed - center) - tol


def permutation_p(values: np.ndarray, n: int, alternative: str = "greater", method: str = "auto",
                  budget: int = DEFAULT_BUDGET, rng: np.random.Generator | None = None, return_null: bool = False) -> PValue:
    """p-value of the first n of `values` (the observed X) against every equal-size split.

    values: s(w) for X then Y (or any per-item statistic); the statistic is the sum over X.
    auto: exact when C(N, n) <= budget, else sampled.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    values = np.asarray(values, dtype=np.float64)
    N = len(values)
    partitions = comb(N, n)
    observed = float(values[:n].sum())
    center = n * float(values.mean())           # the null mean of a subset sum
    scale = float(np.abs(values).sum()) or 1.0
    if method == "auto":
        method = "exact" if partitions <= budget else "sampled"
    floor = min_p(partitions, method, budget, alternative, 2 * n == N)
    if method == "exact":
        check_exact(partitions)
        hits = sum(int(_exceeds(null, observed, alternative, center, scale).sum()) for null in subset_sum_chunks(values, n))
        return PValue(hits / partitions, "exact", partitions, partitions, floor)
    rng = rng if rng is not None else np.random.default_rng()
    if method == "sampled":
        null = sampler.subset_sums(values, n, budget - 1, rng)
        hits = int(_exceeds(null, observed, alternative, center, scale).sum())
        return PValue((1 + hits) / budget, "sampled", budget, partitions, floor, null if return_null else None)
    # parametric (Caliskan et al.'s replication): normal fit to the sampled test statistic
    null = sampler.subset_sums(values, n, budget, rng)
    total = float(values.sum())
    stat_null, stat = 2 * null - total, 2 * observed - total
    mu, sd = stat_null.mean(), stat_null.std(ddof=1)
    from scipy import stats as sps  # here: scipy.stats costs half a second to import
    if alternative == "greater":
        p = sps.norm.sf(stat, mu, sd)
    elif alternative == "less":
        p = sps.norm.cdf(stat, mu, sd)
    else:
        p = 2 * sps.norm.sf(abs(stat - mu), 0, sd)
    return PValue(float(min(p, 1.0)), "parametric", budget, partitions, None, null if return_null else None)


def clustered_p(values: np.ndarray, groups: np.ndarray, n_groups_x: int, alternative: str = "greater",
                budget: int = DEFAULT_BUDGET, rng: np.random.Generator | None = None, method: str = "auto") -> PValue:
    """Word-level permutation for sentence tests: whole words move with all their sentences.

    values: s(w) per stimulus, X first; groups: a word id per stimulus, X's words being
    0..n_groups_x-1 and Y's the rest. Statistic: mean over X_i minus mean over Y_i (words
    may carry different numbers of sentences, so sums are not comparable).
    method: auto | exact | sampled (a normal fit has no clustered form)."""
    if method not in ("auto", "exact", "sampled"):
        raise InvalidInput(f"clustered permutation has no {method!r} form (use auto, exact or sampled)")
    values = np.asarray(values, dtype=np.float64)
    G = int(groups.max()) + 1
    per_group = np.zeros((G, 2))
    np.add.at(per_group, groups, np.column_stack([values, np.ones_like(values)]))
    total, count = per_group.sum(axis=0)

    def mean_diff(sums):
        sx, cx = sums[..., 0], sums[..., 1]
        return sx / cx - (total - sx) / (count - cx)

    observed = float(mean_diff(per_group[:n_groups_x].sum(axis=0)))
    partitions = comb(G, n_groups_x)
    scale = float(np.abs(values).mean()) or 1.0
    if method == "auto":
        method = "exact" if partitions <= budget else "sampled"
    floor = min_p(partitions, method, budget, alternative, 2 * n_groups_x == G)
    if method == "exact":
        check_exact(partitions)
        hits = sum(int(_exceeds(mean_diff(null), observed, alternative, 0.0, scale).sum())
                   for null in subset_sum_chunks(per_group, n_groups_x))
        return PValue(hits / partitions, "exact-clustered", partitions, partitions, floor)
    rng = rng if rng is not None else np.random.default_rng()
    null = mean_diff(sampler.subset_sums(per_group, n_groups_x, budget - 1, rng))
    hits = int(_exceeds(null, observed, alternative, 0.0, scale).sum())
    return PValue((1 + hits) / budget, "sampled-clustered", budget, partitions, floor)


def bootstrap_d(sim_a: np.ndarray, sim_b: np.ndarray, nx: int, reps: int, rng: np.random.Generator,
                level: float = 0.95, ddof: int = 1, groups: np.ndarray | None = None) -> tuple[float, float]:
    """Percentile CI for d, resampling X, Y, A and B each with replacement.

    sim_a, sim_b: cosine similarities of the targets (X rows first) with A and with B.
    groups: resample whole words of X and Y (with all their sentences) instead of items."""
    N, na, nb = sim_a.shape[0], sim_a.shape[1], sim_b.shape[1]
    # bootstrap counts of each attribute are multinomial: one vectorised draw for all replicates
    wa = rng.multinomial(na, np.full(na, 1 / na), size=reps).T / na
    wb = rng.multinomial(nb, np.full(nb, 1 / nb), size=reps).T / nb
    s = sim_a @ wa - sim_b @ wb                   # (N, reps): s(w) under resampled attributes
    x_items, y_items = np.arange(nx), np.arange(nx, N)
    ds = np.empty(reps)
    for r in range(reps):
        if groups is None:
            xi, yi = rng.choice(x_items, nx), rng.choice(y_items, N - nx)
        else:
            xi, yi = _resample_groups(groups[:nx], rng), _resample_groups(groups[nx:], rng) + nx
        ds[r] = effect_size(s[xi, r], s[yi, r], ddof)
    lo, hi = np.nanquantile(ds, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _resample_groups(groups: np.ndarray, rng) -> np.ndarray:
    ids = np.unique(groups)
    picked = rng.choice(ids, len(ids))
    members = {g: np.flatnonzero(groups == g) for g in ids}
    return np.concatenate([members[g] for g in picked])
