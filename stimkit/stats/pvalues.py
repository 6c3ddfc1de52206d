"""Permutation p-values over partitions of the targets (May et al. 2019, appendix A).

p-values are over equal-size partitions (X_i, Y_i) of X u Y, with the non-strict
inequality of May et al. (appendix A). Because sum_{X u Y} s(w) is fixed, ordering
partitions by sum_{X_i} s(w) orders them exactly as the full statistic does, so the
null distribution is the distribution of a random n-subset sum of the s(w) values.
Clustered tests move whole words: the units are words, each carrying (sum of s, count).
Both go through one core, `subset_p`: exact enumeration or sampling, one rule for auto.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, combinations, islice
from math import comb
from typing import Callable

import numpy as np

from .. import DEFAULT_BUDGET
from . import sampler
from .weat import InvalidInput

from ..choices import ALTERNATIVES, P_METHODS  # noqa: E402  (one list each, shared with the light CLI)
METHODS = P_METHODS
# Two partition sums closer than this (relative to the scale of the values) are a tie:
# the same multiset of values summed in another order differs in the last bits.
_TIE_RTOL = 1e-11


# Exact enumeration beyond this many partitions takes minutes: sample instead.
EXACT_LIMIT = 5_000_000
_EXACT_CHUNK = 200_000   # partitions enumerated at a time: memory stays bounded


def all_subsets(N: int, k: int) -> np.ndarray:
    """Every k-subset of range(N) as rows of a (C(N, k), k) index array (itertools order;
    chain.from_iterable flattens in C, no Python step per index)."""
    count = comb(N, k)
    flat = np.fromiter(chain.from_iterable(combinations(range(N), k)), dtype=np.int32, count=count * k)
    return flat.reshape(count, k)


def exact_subset_sums(values: np.ndarray, k: int) -> np.ndarray:
    """Sum of `values` over every k-subset (values may be (N,) or (N, m))."""
    idx = all_subsets(len(values), k)
    return values[idx].sum(axis=1)


@lru_cache(maxsize=32)
def _small_subsets(N: int, k: int) -> np.ndarray:
    """all_subsets for a space that fits in one chunk, kept: a study enumerates the same
    C(16, 8) again and again (each word test, each word left out)."""
    idx = all_subsets(N, k)
    idx.flags.writeable = False
    return idx


def subset_sum_chunks(values: np.ndarray, k: int, chunk: int = _EXACT_CHUNK):
    """exact_subset_sums in chunks of `chunk` subsets, so memory stays bounded."""
    if comb(len(values), k) <= chunk:
        yield values[_small_subsets(len(values), k)].sum(axis=1)
        return
    it = combinations(range(len(values)), k)
    while True:
        flat = np.fromiter(chain.from_iterable(islice(it, chunk)), dtype=np.int32)
        if flat.size == 0:
            return
        yield values[flat.reshape(-1, k)].sum(axis=1)


# Beyond this many columns (tests over the same partitions: a baseline's K random pairs), the
# partition sums come from 0/1 indicator rows times the values, one matrix product a chunk,
# rather than gathered subset by subset: a gather of C(16, 8) subsets x 1,000 columns would
# hold 800 MB, a chunk of indicators holds 32.
MANY_COLUMNS = 64
_INDICATOR_CELLS = 1 << 22


def _indicator_rows(width: int) -> int:
    return max(1, _INDICATOR_CELLS // max(1, width))


def exact_indicator_sums(values: np.ndarray, k: int):
    """Sums of the columns of `values` (N, m) over every k-subset of its rows, in
    itertools.combinations order, a chunk of subsets at a time (indicator rows @ values)."""
    N = len(values)
    it = combinations(range(N), k)
    rows = _indicator_rows(max(N, values.shape[1]))
    while True:
        flat = np.fromiter((i for c in islice(it, rows) for i in c), dtype=np.int64)
        if flat.size == 0:
            return
        idx = flat.reshape(-1, k)
        member = np.zeros((len(idx), N))
        member[np.arange(len(idx))[:, None], idx] = 1.0
        yield member @ values


def random_indicator_sums(values: np.ndarray, k: int, total: int, rng: np.random.Generator):
    """Sums of the columns of `values` (N, m) over `total` independent uniform k-subsets of its
    rows (each the k smallest of N uniform keys), a chunk of subsets at a time."""
    N = len(values)
    rows = _indicator_rows(max(N, values.shape[1]))
    for start in range(0, total, rows):
        c = min(rows, total - start)
        idx = np.argpartition(rng.random((c, N)), k - 1, axis=1)[:, :k] if 0 < k < N else np.tile(np.arange(k), (c, 1))
        member = np.zeros((c, N))
        member[np.arange(c)[:, None], idx] = 1.0
        yield member @ values


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
    p: float           # an (m,) array when the values had m columns (one p per column, shared partitions)
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


def _hits(null: np.ndarray, observed, alternative: str, center, scale):
    """How many rows of the null reach the observed statistic: an int, or one count per
    column when the statistic has columns."""
    found = _exceeds(null, observed, alternative, center, scale).sum(axis=0)
    return int(found) if np.ndim(found) == 0 else found


def subset_p(units: np.ndarray, k: int, statistic: Callable[[np.ndarray], np.ndarray], observed,
             center, scale, alternative: str, method: str, budget: int,
             rng: np.random.Generator | None, label: str = "", return_null: bool = False, dense: bool = False) -> PValue:
    """The one core of every permutation p: the statistic of the first k units against
    every k-subset (exact) or budget - 1 random ones with the observed counted once (sampled).

    units: per-unit values, (N,) or (N, m); statistic: subset sums -> the test statistic, a
    number per subset or (with columns) a row per subset, each column a test of its own over
    the same partitions (observed, center and scale then one per column); method: auto
    (exact when C(N, k) <= budget), exact or sampled. `label` marks the scheme in the method
    name ("-clustered"). dense: sample with sampler.dense_subset_sums (few draws, many columns).
    Over MANY_COLUMNS columns (and no null asked for) the sums come from indicator products,
    chunked, and sampled draws are counted chunk by chunk: memory stays bounded."""
    partitions = comb(len(units), k)
    if method == "auto":
        method = "exact" if partitions <= budget else "sampled"
    floor = min_p(partitions, method, budget, alternative, 2 * k == len(units))
    many = np.ndim(units) == 2 and units.shape[1] > MANY_COLUMNS and not return_null
    if method == "exact":
        check_exact(partitions)
        sums = exact_indicator_sums(units, k) if many else subset_sum_chunks(units, k)
        hits = sum(_hits(statistic(null), observed, alternative, center, scale) for null in sums)
        return PValue(hits / partitions, "exact" + label, partitions, partitions, floor)
    rng = rng if rng is not None else np.random.default_rng()
    if many:  # bounded memory: the hits of each chunk of draws, never the whole null
        hits = sum(_hits(statistic(null), observed, alternative, center, scale)
                   for null in random_indicator_sums(units, k, budget - 1, rng))
        return PValue((1 + hits) / budget, "sampled" + label, budget, partitions, floor)
    null = statistic(sampler.subset_sums(units, k, budget - 1, rng, dense))
    hits = _hits(null, observed, alternative, center, scale)
    return PValue((1 + hits) / budget, "sampled" + label, budget, partitions, floor, null if return_null else None)


def check_method(method: str, alternative: str, methods: tuple[str, ...] = METHODS) -> None:
    if alternative not in ALTERNATIVES:
        raise InvalidInput(f"alternative must be one of {', '.join(ALTERNATIVES)}, not {alternative!r}")
    if method not in methods:
        raise InvalidInput(f"method must be one of {', '.join(methods)}, not {method!r}")


def _identity(sums: np.ndarray) -> np.ndarray:
    return sums


def permutation_p(values: np.ndarray, n: int, alternative: str = "greater", method: str = "auto",
                  budget: int = DEFAULT_BUDGET, rng: np.random.Generator | None = None, return_null: bool = False,
                  dense: bool = False) -> PValue:
    """p-value of the first n of `values` (the observed X) against every split into n and N - n.

    values: s(w) for X then Y (or any per-item statistic); the statistic is the sum over X.
    values of shape (N, m): m tests over the same partitions, p an (m,) array.
    auto: exact when C(N, n) <= budget, else sampled; parametric: a normal fit to the
    sampled statistic (Caliskan et al.'s replication code)."""
    check_method(method, alternative)
    values = np.asarray(values, dtype=np.float64)
    observed = _number(values[:n].sum(axis=0))
    center = n * _number(values.mean(axis=0))           # the null mean of a subset sum
    scale = _scale(np.abs(values).sum(axis=0))
    if method != "parametric":
        return subset_p(values, n, _identity, observed, center, scale, alternative, method, budget, rng,
                        return_null=return_null, dense=dense)
    rng = rng if rng is not None else np.random.default_rng()
    null = sampler.subset_sums(values, n, budget, rng, dense)
    total = _number(values.sum(axis=0))
    stat_null, stat = 2 * null - total, 2 * observed - total
    mu, sd = stat_null.mean(axis=0), stat_null.std(axis=0, ddof=1)
    from scipy import stats as sps  # here: scipy.stats costs half a second to import
    if alternative == "greater":
        p = sps.norm.sf(stat, mu, sd)
    elif alternative == "less":
        p = sps.norm.cdf(stat, mu, sd)
    else:
        p = 2 * sps.norm.sf(abs(stat - mu), 0, sd)
    return PValue(_number(np.minimum(p, 1.0)), "parametric", budget, comb(len(values), n), None,
                  null if return_null else None)


def _scale(size):
    """The size of the values (one per column), for the tie tolerance; 1 where they are all 0."""
    return (float(size) or 1.0) if np.ndim(size) == 0 else np.where(size > 0, size, 1.0)


def _number(x):
    """A float for a 0-d result, the array itself for one value per column."""
    return float(x) if np.ndim(x) == 0 else x


def clustered_p(values: np.ndarray, groups: np.ndarray, n_groups_x: int, alternative: str = "greater",
                budget: int = DEFAULT_BUDGET, rng: np.random.Generator | None = None, method: str = "auto",
                dense: bool = False) -> PValue:
    """Word-level permutation for sentence tests: whole words move with all their sentences.

    values: s(w) per stimulus, X first (or (N, m): m tests over the same partitions of the
    words, p an (m,) array); groups: a word id per stimulus, X's words being 0..n_groups_x-1
    and Y's the rest (weat.group_ids). Statistic: mean over X_i minus mean over Y_i (words
    may carry different numbers of sentences, so sums are not comparable).
    method: auto | exact | sampled (a normal fit has no clustered form)."""
    if method == "parametric":
        raise InvalidInput("clustered permutation has no 'parametric' form (use auto, exact or sampled)")
    check_method(method, alternative, ("auto", "exact", "sampled"))
    values = np.asarray(values, dtype=np.float64)
    columns = values.reshape(len(values), -1)
    m = columns.shape[1]
    G = int(groups.max()) + 1
    per_group = np.zeros((G, m + 1))  # each column's sum over the word's stimuli, then their count
    np.add.at(per_group, groups, np.column_stack([columns, np.ones(len(values))]))
    total = per_group.sum(axis=0)

    def mean_diff(sums):
        sx, cx = sums[..., :m], sums[..., m:]
        diff = sx / cx - (total[:m] - sx) / (total[m] - cx)
        return diff if values.ndim > 1 else diff[..., 0]

    observed = _number(mean_diff(per_group[:n_groups_x].sum(axis=0)))
    scale = _scale(np.abs(values).mean(axis=0))
    return subset_p(per_group, n_groups_x, mean_diff, observed, 0.0, scale, alternative, method, budget, rng,
                    label="-clustered", dense=dense)
