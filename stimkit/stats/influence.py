"""The influence of every word (pure): d, and optionally p, with each target and each
attribute word left out in turn (Antoniak & Mimno 2021, "Bad Seeds": one word can carry a
result).

A word leaves with all its stimuli: a target word's sentences leave X or Y; an attribute
word's sentences leave A or B, which changes every target's s(w). Both are closed forms over
the target x attribute cosines, one array pass for all words of a role:

- a target word: d from the sums and sums of squares of s(w) less the word's own;
- an attribute word: s(w) without it for every target at once, a column per word,
  (row sum of cosines to A - the word's columns) / (|A| - its count) - mean cosine to B.

p without a word is the result's own procedure (units, alternative, method) on what is left:
the attribute words' columns share one set of partitions (`permutation_p` / `clustered_p`
over columns), and so do target words that leave as many stimuli (with words as units, each
target word has a partition space of its own). Where a p is sampled with stimuli as units,
every column of the result shares one set of draws (`shared_sampled_p`): each draw is a random
order of the targets, and a column's X is the first of its targets in that order, as many as
its X keeps; a uniform subset for every column at once, whatever word left, so one sort of the
draws serves every word (each p is still its own test's, with its own Monte Carlo error).

The Monte Carlo error of a sampled p is binomial: sqrt(p (1 - p) / draws), `Influence.p_se`
(0 where p is exact). A p near alpha is drawn again with more draws (`_decided`), so the
error where it matters is a tenth of alpha or less.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from .pvalues import clustered_p, permutation_p
from .weat import group_ids

ROLES = ("X", "Y", "A", "B")


@dataclass(frozen=True)
class Influence:
    """One entry per word, in role order (X, Y, A, B) and each role's first-seen word order."""
    role: tuple[str, ...]
    word: tuple[str, ...]
    n_stimuli: np.ndarray          # the stimuli that leave with the word
    d: np.ndarray                  # d without the word (NaN where undefined: the role would be empty, or no spread)
    p: np.ndarray                  # p without the word (NaN where d is undefined, or p was not asked for)
    p_method: tuple[str | None, ...]
    draws: np.ndarray | None = None  # partitions drawn for a sampled p (0: exact or none; NaN: a normal fit)

    @property
    def p_se(self) -> np.ndarray:
        """The Monte Carlo standard error of each p: sqrt(p (1 - p) / draws), 0 where exact, NaN
        without a p or for a normal fit (its error is not binomial)."""
        draws = np.zeros(len(self.p)) if self.draws is None else self.draws
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.sqrt(self.p * (1 - self.p) / draws)
        return np.where(np.isfinite(self.p), np.where(draws == 0, 0.0, se), np.nan)

    def __len__(self) -> int:
        return len(self.word)


def _codes(words) -> tuple[np.ndarray, list]:
    """A code per item for its word (first-seen order) and the words."""
    names = list(dict.fromkeys(words))
    index = {w: i for i, w in enumerate(names)}
    return np.fromiter((index[w] for w in words), dtype=np.int64, count=len(words)), names


def _indicator(codes: np.ndarray, n_words: int) -> np.ndarray:
    m = np.zeros((len(codes), n_words))
    m[np.arange(len(codes)), codes] = 1.0
    return m


def _d_columns(s: np.ndarray, nx: int, ddof: int) -> np.ndarray:
    """Caliskan's d of each column of s ((N, m), X's rows first); NaN where s has no spread."""
    sd = s.std(axis=0, ddof=ddof)
    d = (s[:nx].mean(axis=0) - s[nx:].mean(axis=0)) / np.where(sd > 0, sd, np.nan)
    return d


def _d_without_targets(s: np.ndarray, nx: int, codes: np.ndarray, n_words: int, offset: int, ddof: int):
    """d with each of one target role's words left out (the role's items start at `offset`)."""
    n_role = len(codes)
    centred = s - s.mean()                                   # d is shift invariant: sums of squares stay small
    part = centred[offset:offset + n_role]
    ind = _indicator(codes, n_words)
    count, total, squares = ind.sum(axis=0), part @ ind, (part ** 2) @ ind
    sum_x, sum_y = centred[:nx].sum(), centred[nx:].sum()
    nx_w = nx - count if offset == 0 else np.full(n_words, float(nx))
    ny_w = (len(s) - nx) - count if offset > 0 else np.full(n_words, float(len(s) - nx))
    sx_w = sum_x - total if offset == 0 else np.full(n_words, sum_x)
    sy_w = sum_y - total if offset > 0 else np.full(n_words, sum_y)
    n_w = nx_w + ny_w
    t_w = sx_w + sy_w
    q_w = (centred ** 2).sum() - squares
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (q_w - t_w ** 2 / n_w) / (n_w - ddof)
        d = (sx_w / nx_w - sy_w / ny_w) / np.sqrt(var)
    scale = max(float((centred ** 2).sum()), 1e-300)
    undefined = (nx_w == 0) | (ny_w == 0) | (var <= 1e-13 * scale / np.maximum(n_w, 1))
    return np.where(undefined, np.nan, d), count


def _s_without_attributes(sim_own: np.ndarray, sim_other: np.ndarray, codes: np.ndarray, n_words: int, sign: float):
    """s(w) of every target (rows) with each of one attribute role's words left out (columns)."""
    ind = _indicator(codes, n_words)
    count = ind.sum(axis=0)
    left = len(codes) - count
    with np.errstate(divide="ignore", invalid="ignore"):
        own = (sim_own.sum(axis=1, keepdims=True) - sim_own @ ind) / left
    s = sign * (own - sim_other.mean(axis=1, keepdims=True))
    return s, count, left > 0


def word_influence(sim_a: np.ndarray, sim_b: np.ndarray, nx: int, words_x, words_y, words_a, words_b, ddof: int = 1, *,
                   alternative: str | None = None, method: str = "auto", budget: int = 100_000,
                   sample_budget: int = 10_000, rng: np.random.Generator | None = None, word_units: bool = False,
                   alpha: float | None = None) -> Influence:
    """d (and, given an `alternative`, p) with each target and attribute word left out.

    sim_a, sim_b: cosines of every target stimulus (rows, X's first, nx of them) with every
    stimulus of A and of B (columns); words_*: the word each stimulus of X, Y, A, B belongs to.
    p: the permutation test of the result (`alternative`, `method`, and `budget` for `auto`:
    exact where the partitions fit in it; `word_units`: whole words move with their stimuli,
    as `clustered_p`), drawn from `rng`, sampled from at most `sample_budget` partitions.
    Given `alpha`, a sampled p is drawn first from FIRST_DRAWS partitions and again from
    `sample_budget` only where it lies within DECIDED_SE standard errors of alpha: enough
    to decide at alpha."""
    words_x, words_y = np.asarray(words_x, dtype=object), np.asarray(words_y, dtype=object)
    s = sim_a.mean(axis=1) - sim_b.mean(axis=1)
    N = len(s)
    # a sampled p with stimuli as units: every column on one set of draws (module docstring)
    shared = not word_units and method in ("auto", "sampled") and alternative is not None

    def sampled(partitions: int) -> bool:
        return shared and (method == "sampled" or partitions > budget)

    parts = []  # (role, words, n_stimuli, d, tests) per role; tests: (word indices, p of those columns at a budget)
    pooled = []  # columns on the shared draws: (role index, word index, values or None, target items left out, k)
    for role, words, offset in (("X", words_x, 0), ("Y", words_y, nx)):
        codes, names = _codes(list(words))
        d, count = _d_without_targets(s, nx, codes, len(names), offset, ddof)
        ok = np.flatnonzero(np.isfinite(d))
        if word_units:  # each word left out leaves its own words to move: a test each
            tests = [([i], _target_test(s, nx, words_x, words_y, _keep(len(s), offset, codes, i), alternative, method, rng))
                     for i in ok]
        else:  # words with as many stimuli leave partitions of one size: a test a column, shared draws
            tests = []
            for n in np.unique(count[ok]):
                same = ok[count[ok] == n]
                k = nx - int(n) if offset == 0 else nx
                if sampled(comb(N - int(n), k)):
                    pooled += [(len(parts), i, None, offset + np.flatnonzero(codes == i), k) for i in same]
                    continue
                columns = np.column_stack([s[_keep(len(s), offset, codes, i)] for i in same])
                tests.append((same, _columns_test(columns, k, None, alternative, method, rng)))
        parts.append((role, names, count, d, tests))
    for role, words, own, other, sign in (("A", words_a, sim_a, sim_b, 1.0), ("B", words_b, sim_b, sim_a, -1.0)):
        codes, names = _codes(list(words))
        s_w, count, ok = _s_without_attributes(own, other, codes, len(names), sign)
        d = np.where(ok, _d_columns(np.where(ok, s_w, 0.0), nx, ddof), np.nan)
        keep = np.flatnonzero(np.isfinite(d))
        groups = group_ids(list(words_x), list(words_y)) if word_units else None
        if keep.size and groups is None and sampled(comb(N, nx)):
            pooled += [(len(parts), i, s_w[:, i], None, nx) for i in keep]
            parts.append((role, names, count, d, []))
            continue
        parts.append((role, names, count, d, [(keep, _columns_test(s_w[:, keep], nx, groups, alternative, method, rng))]
                      if keep.size else []))
    p_parts, methods, draws = [], [], []
    for role, names, count, d, tests in parts:
        p = np.full(len(names), np.nan)
        drawn = np.zeros(len(names))
        found: list[str | None] = [None] * len(names)
        for which, test in tests if alternative is not None else ():
            got, how, n_drawn = _decided(test, len(which), method, budget, sample_budget, alpha)
            p[which], drawn[which] = got, n_drawn
            for i, h in zip(which, how):
                found[i] = h
        p_parts.append(p)
        draws.append(drawn)
        methods.append(found)
    if pooled:
        got, n_drawn = _decided_shared(s, nx, pooled, alternative, sample_budget, alpha, rng)
        for (part, i, *_), p, n in zip(pooled, got, n_drawn):
            p_parts[part][i], draws[part][i], methods[part][i] = p, n, "sampled"
    return Influence(
        role=tuple(role for role, names, *_ in parts for _ in names),
        word=tuple(w for _, names, *_ in parts for w in names),
        n_stimuli=np.concatenate([count for _, _, count, _, _ in parts]).astype(np.int64),
        d=np.concatenate([d for _, _, _, d, _ in parts]),
        p=np.concatenate(p_parts), p_method=tuple(m for found in methods for m in found),
        draws=np.concatenate(draws))


FIRST_DRAWS = 2_000   # a leave-one-out p's first draw ...
DECIDED_SE = 3.3      # ... decides at alpha when it lies this many standard errors from alpha (binomial, at alpha)


def _decided(test, m: int, method: str, budget: int, sample_budget: int, alpha: float | None):
    """p of m columns: exact where the result's own test enumerates (`auto` at its `budget`, or
    `exact`); else sampled at `sample_budget`, or (given alpha) first at FIRST_DRAWS and again
    at `sample_budget` for the columns whose first p is too near alpha to decide."""
    if method == "exact" or (method == "auto" and test.partitions <= budget):
        pv = test(np.arange(m), max(budget, test.partitions))
        return np.atleast_1d(np.asarray(pv.p, dtype=np.float64)).copy(), [pv.method] * m, np.zeros(m)
    first = _first_draws(method, sample_budget, alpha)
    pv = test(np.arange(m), first)
    p, how = np.atleast_1d(np.asarray(pv.p, dtype=np.float64)).copy(), [pv.method] * m
    drawn = np.full(m, float(first))
    if first < sample_budget:
        near = _near(p, alpha, first)
        if near.size:
            again = test(near, sample_budget)
            p[near] = np.atleast_1d(again.p)
            drawn[near] = sample_budget
            for i in near:
                how[i] = again.method
    return p, how, np.where([h == "parametric" for h in how], np.nan, drawn)


def _first_draws(method: str, sample_budget: int, alpha: float | None) -> int:
    return min(sample_budget, FIRST_DRAWS) if alpha is not None and method != "parametric" else sample_budget


def _near(p: np.ndarray, alpha: float, draws: int) -> np.ndarray:
    """The columns whose p, from `draws` draws, lies too near alpha to decide."""
    return np.flatnonzero(np.abs(p - alpha) <= DECIDED_SE * np.sqrt(alpha * (1 - alpha) / draws))


def _decided_shared(s: np.ndarray, nx: int, pooled: list, alternative: str, sample_budget: int, alpha, rng):
    """_decided for the columns on shared draws: all at FIRST_DRAWS, then those near alpha again."""
    first = _first_draws("sampled", sample_budget, alpha)
    p = shared_sampled_p(s, nx, [c[2:] for c in pooled], alternative, first, rng)
    drawn = np.full(len(pooled), float(first))
    if first < sample_budget:
        near = _near(p, alpha, first)
        if near.size:
            p[near] = shared_sampled_p(s, nx, [pooled[i][2:] for i in near], alternative, sample_budget, rng)
            drawn[near] = sample_budget
    return p, drawn


_SHARED_CELLS = 1 << 21   # draws x targets held at a time


def shared_sampled_p(s: np.ndarray, nx: int, columns: list, alternative: str, budget: int,
                     rng: np.random.Generator) -> np.ndarray:
    """The sampled permutation p (as pvalues.permutation_p: budget - 1 draws, the observed
    counted once) of each column, all columns on one set of random orders of the targets.

    s: s(w) of the targets, X's nx first. A column is (values, None, k) for an attribute
    word left out (its s(w) of every target; k = nx), or (None, items, k) for a target word
    left out (s without `items`, all of X or all of Y; k its X's size). Its X in a draw is the
    first k of its targets in the draw's order: a uniform k-subset of them."""
    from .pvalues import _exceeds

    N = len(s)
    attr = [j for j, c in enumerate(columns) if c[0] is not None]
    V = np.column_stack([columns[j][0] for j in attr]) if attr else np.zeros((N, 0))
    by_size: dict[int, list[int]] = {}  # target columns by how many items leave
    for j, c in enumerate(columns):
        if c[0] is None:
            by_size.setdefault(len(c[1]), []).append(j)
    # each column's observed statistic (its X's sum), null mean and scale (pvalues.permutation_p)
    observed, center, scale = np.empty(len(columns)), np.empty(len(columns)), np.empty(len(columns))
    for j, (values, items, k) in enumerate(columns):
        if values is None:
            values = np.delete(s, items)
        observed[j], center[j] = values[:k].sum(), k * values.mean()
        scale[j] = float(np.abs(values).sum()) or 1.0
    # a column's X ends somewhere in the draw's order between positions lo and hi: only those
    # are put in order (argpartition at each), the first lo stay a set
    ends = [columns[j][2] for j in attr] + [e for j, c in enumerate(columns) if c[0] is None
                                            for e in (c[2], c[2] + len(c[1]))]
    lo, hi = min(ends), max(ends)
    kth = list(range(max(lo - 1, 0), min(hi, N - 1) + 1))
    marks = np.r_[np.full(lo, -1), np.arange(lo, hi)]          # the rank each of the first hi positions gets
    hits = np.zeros(len(columns))
    rows_at_once = max(1, _SHARED_CELLS // max(N, 1))
    total = budget - 1
    for start in range(0, total, rows_at_once):
        rows = min(rows_at_once, total - start)
        order = np.argpartition(rng.random((rows, N)), kth, axis=1)[:, :hi]
        rank = np.full((rows, N), N, dtype=np.int64)          # N: after hi
        np.put_along_axis(rank, order, np.broadcast_to(marks, order.shape), axis=1)
        null = np.empty((rows, len(columns)))
        if attr:
            null[:, attr] = (rank < nx).astype(np.float64) @ V
        prefix = np.empty((rows, hi - lo + 1))                  # sum of the first r in order, r = lo..hi
        prefix[:, 0] = s[order[:, :lo]].sum(axis=1)
        np.cumsum(s[order[:, lo:hi]], axis=1, out=prefix[:, 1:])
        prefix[:, 1:] += prefix[:, :1]
        for n, which in by_size.items():
            items = np.array([columns[j][1] for j in which])            # (columns, n)
            k = np.array([columns[j][2] for j in which])
            left = rank[:, items]                                       # (rows, columns, n): where they fell
            end = np.broadcast_to(k, (rows, len(which))).copy()
            for r in np.sort(left, axis=2).transpose(2, 0, 1):         # each left-out item before the end moves it on
                end += r < end
            inside = left < end[:, :, None]
            null[:, which] = (np.take_along_axis(prefix, end - lo, axis=1)
                              - (inside * s[items][None, :, :]).sum(axis=2))
        hits += _exceeds(null, observed, alternative, center, scale).sum(axis=0)
    return (1 + hits) / budget


def _columns_test(columns: np.ndarray, nx: int, groups, alternative, method, rng):
    """The test of some of `columns` (each the s(w) of every target with one word left out) at a budget."""
    def test(which, budget):
        values = columns[:, which]
        if groups is not None:
            return clustered_p(values, groups[0], groups[1], alternative, budget, rng, method, dense=True)
        return permutation_p(values, nx, alternative, method, budget, rng, dense=True)
    test.partitions = comb(int(groups[0].max()) + 1, groups[1]) if groups is not None else comb(len(columns), nx)
    return test


def _target_test(s: np.ndarray, nx: int, words_x, words_y, keep: np.ndarray, alternative, method, rng):
    """The word-unit test with the targets `keep` (one target word left out) at a budget."""
    groups, n_gx = group_ids(list(words_x[keep[:nx]]), list(words_y[keep[nx:]]))

    def test(which, budget):
        return clustered_p(s[keep], groups, n_gx, alternative, budget, rng, method, dense=True)
    test.partitions = comb(int(groups.max()) + 1, n_gx)
    return test


def _keep(n: int, offset: int, codes: np.ndarray, word: int) -> np.ndarray:
    """The targets (X's first) that stay when one target word (of the role at `offset`) leaves."""
    keep = np.ones(n, bool)
    keep[offset + np.flatnonzero(codes == word)] = False
    return keep
