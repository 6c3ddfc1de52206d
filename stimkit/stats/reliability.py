"""Split-half reliability of a target set: do its words agree? A pure function over arrays.

A target set is an instrument whose items are its words. Each word w has a profile over the
test's attribute items j (A then B): cos(w, j), a word's sentences averaged in a sentence
test, less the mean over all the test's targets (X u Y) of cos(., j), so that what every
target shares with an attribute item (its frequency, the space's common direction) drops
out and what is left is how the word leans relative to the test's targets. Split the set's
words in two halves; if its words measure one thing, the halves' mean profiles agree across
the attribute items. Their Pearson r, averaged over splits, is stepped up to the whole set's
length by Spearman-Brown: 2r / (1 + r).

Reliability in measurement theory's terms (Du et al. 2021), over any table of scores:

- `icc`: intraclass correlations of a subjects x raters table (Shrout & Fleiss 1979; McGraw
  & Wong 1996), the six kinds under pingouin's names: ICC1 (one-way random), ICC2 (two-way
  random, absolute agreement: test-retest across seeds), ICC3 (two-way mixed, consistency:
  inter-rater across scoring rules), and their k-rater means ICC1k, ICC2k, ICC3k. Each from
  the two-way ANOVA mean squares with its F test and 95% interval (F-based for 1 and 3;
  Satterthwaite's df for 2), as pingouin.intraclass_corr computes them.
- `cronbach_alpha`: alpha of an observations x items table, with Feldt's F interval (as
  pingouin.cronbach_alpha).
- `split_half_items`: the Spearman-Brown split-half reliability of the same table
  (`split_half` over its items).

Missing cells are refused, not dropped: pingouin drops a subject with a missing rating
(listwise), which silently changes which subjects the ICC speaks for; a result missing from
one replicate is a fault to name, not a row to lose.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from .weat import InvalidInput, unit_rows

ICC_KINDS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")


def profiles(T: np.ndarray, word_ids: np.ndarray, A: np.ndarray, B: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(words, |A| + |B|): each word's mean cosine with every attribute item, less the mean
    of the reference rows' (the test's targets') cosines with that item. word_ids: a word
    index (0..W-1) per row of T."""
    U = np.concatenate([unit_rows(A), unit_rows(B)])
    words = int(word_ids.max()) + 1
    # a mean of cosines with u is the mean unit vector's dot with u: average the (few) unit
    # vectors first, then one product, not a cosine per stimulus and attribute item
    member = np.zeros((words, len(word_ids)))
    member[word_ids, np.arange(len(word_ids))] = 1.0
    means = (member @ unit_rows(T)) / member.sum(axis=1, keepdims=True)
    return (means - unit_rows(reference).mean(axis=0)) @ U.T


def split_half(profile: np.ndarray, rng: np.random.Generator, n_splits: int = 200) -> float:
    """Spearman-Brown split-half reliability of the rows (items) of `profile` (items x
    observations): every split into halves when there are at most `n_splits`, else that many
    random ones. NaN with fewer than 4 items or 2 observations (no correlation to speak of)."""
    return _split_half(np.asarray(profile, dtype=np.float64), rng, n_splits)[0]


def _split_half(profile: np.ndarray, rng: np.random.Generator, n_splits: int) -> tuple[float, float]:
    """(Spearman-Brown value, mean r over splits) of split_half."""
    n, m = profile.shape
    nan = float("nan")
    if n < 4 or m < 2:
        return nan, nan
    half = n // 2
    total = comb(n, half) // (2 if 2 * half == n else 1)  # a split and its mirror are one split
    if total <= n_splits:
        chosen = [c for c in combinations(range(n), half) if 2 * half != n or 0 in c]
        ind = np.zeros((len(chosen), n), dtype=bool)
        ind[np.arange(len(chosen))[:, None], np.array(chosen)] = True
    else:
        keys = rng.random((n_splits, n))
        ind = np.zeros((n_splits, n), dtype=bool)
        ind[np.arange(n_splits)[:, None], np.argpartition(keys, half - 1, axis=1)[:, :half]] = True
    one = ind @ profile / half
    two = (~ind) @ profile / (n - half)
    one -= one.mean(axis=1, keepdims=True)
    two -= two.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (one * two).sum(axis=1) / np.sqrt((one ** 2).sum(axis=1) * (two ** 2).sum(axis=1))
    r = float(np.nanmean(r)) if np.isfinite(r).any() else nan
    return (2 * r / (1 + r) if np.isfinite(r) and r > -1 else nan), r


@dataclass(frozen=True)
class ICC:
    """An intraclass correlation with its F test and interval (module docstring)."""
    kind: str                # ICC1 | ICC2 | ICC3 | ICC1k | ICC2k | ICC3k (pingouin's names)
    value: float
    ci_low: float
    ci_high: float
    F: float                 # MS_subjects / MS_within (ICC1, ICC1k) or / MS_error (the others)
    df1: int                 # n_subjects - 1
    df2: int                 # n (k - 1) for ICC1, ICC1k; (n - 1)(k - 1) for the others
    p: float                 # of F against 1: P(F' >= F), no agreement beyond chance
    n_subjects: int
    n_raters: int
    level: float = 0.95


@dataclass(frozen=True)
class Alpha:
    """Cronbach's alpha of an observations x items table with Feldt's interval."""
    value: float
    ci_low: float
    ci_high: float
    n: int                   # observations
    k: int                   # items
    level: float = 0.95


@dataclass(frozen=True)
class SplitHalf:
    """Spearman-Brown split-half reliability of an observations x items table."""
    value: float             # 2 r / (1 + r), r the mean over splits of the halves' Pearson r
    r: float                 # that mean r
    n_splits: int            # splits averaged
    exhaustive: bool         # every split (else n_splits random ones)
    n: int                   # observations
    k: int                   # items
    ci_low: float = float("nan")    # alpha's (Feldt's) interval around the split-half value
    ci_high: float = float("nan")
    level: float = 0.95


def _table(x, rows: str, cols: str, what: str) -> np.ndarray:
    """A finite 2-d float table of at least 2 x 2, or a one-line refusal."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise InvalidInput(f"{what}: needs a 2-d table of {rows} x {cols}, got {x.ndim} dimension(s)")
    if x.shape[0] < 2 or x.shape[1] < 2:
        raise InvalidInput(f"{what}: needs at least 2 {rows} and 2 {cols}, got {x.shape[0]} x {x.shape[1]}")
    bad = ~np.isfinite(x)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InvalidInput(f"{what}: {int(bad.sum())} missing or infinite cell(s), the first at {rows[:-1]} {i}, "
                           f"{cols[:-1]} {j}: missing cells are refused, not dropped (give every {rows[:-1]} a score from every {cols[:-1]})")
    return x


def _mean_squares(x: np.ndarray) -> tuple[float, float, float, float]:
    """(MS_subjects, MS_raters, MS_error, MS_within) of the two-way table without replication."""
    n, k = x.shape
    grand = x.mean()
    ss_rows = k * float(np.sum((x.mean(axis=1) - grand) ** 2))
    ss_cols = n * float(np.sum((x.mean(axis=0) - grand) ** 2))
    # the residual from its own definition, not SS_total - SS_rows - SS_cols: no cancellation
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + grand
    ss_err = float(np.sum(resid ** 2))
    return (ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1)),
            (ss_cols + ss_err) / (n * (k - 1)))


def icc(ratings, kind: str, level: float = 0.95, what: str = "ICC") -> ICC:
    """The intraclass correlation `kind` of `ratings` (subjects x raters: targets x judges;
    for test-retest across seeds, the scored items x the seeds), with its F test and `level`
    interval, as pingouin.intraclass_corr computes them (module docstring). Missing cells,
    fewer than 2 subjects or raters, and a table with no variation are refused."""
    from scipy.stats import f

    if kind not in ICC_KINDS:
        raise InvalidInput(f"{what}: kind must be one of {', '.join(ICC_KINDS)}, not {kind!r}")
    if not 0 < level < 1:
        raise InvalidInput(f"{what}: level must lie strictly between 0 and 1, not {level}")
    x = _table(ratings, "subjects", "raters", what)
    n, k = x.shape
    msb, msj, mse, msw = _mean_squares(x)
    if msb + msw <= 0:
        raise InvalidInput(f"{what}: every rating is the same ({x[0, 0]}): agreement is undefined")
    q = 1 - (1 - level) / 2
    df1 = n - 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # F infinite: no residual
        if kind in ("ICC1", "ICC1k", "ICC3", "ICC3k"):
            # one-way (1): the error is everything within a subject; two-way consistency (3):
            # the raters' offsets are taken out first. Shrout & Fleiss's exact F interval either way
            one_way = kind.startswith("ICC1")
            df2, err = (n * (k - 1), msw) if one_way else ((n - 1) * (k - 1), mse)
            F = msb / err
            fl, fu = F / f.ppf(q, df1, df2), F * f.ppf(q, df2, df1)
            if kind.endswith("k"):
                value, lo, hi = (msb - err) / msb, 1 - 1 / fl, 1 - 1 / fu
            else:
                value = (msb - err) / (msb + (k - 1) * err)
                lo, hi = (fl - 1) / (fl + k - 1), (fu - 1) / (fu + k - 1)
        else:
            df2 = (n - 1) * (k - 1)
            F = msb / mse
            one = (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n)
            # McGraw & Wong's (1996) interval for ICC(A,1): Satterthwaite's df v for the
            # denominator's combination of mean squares
            fj = msj / mse
            v = (df2 * (k * one * fj + n * (1 + (k - 1) * one) - k * one) ** 2
                 / (df1 * k ** 2 * one ** 2 * fj ** 2 + (n * (1 + (k - 1) * one) - k * one) ** 2))
            f2u, f2l = f.ppf(q, df1, v), f.ppf(q, v, df1)
            lo = n * (msb - f2u * mse) / (f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
            hi = n * (f2l * msb - mse) / (k * msj + (k * n - k - n) * mse + n * f2l * msb)
            if kind == "ICC2":
                value = one
            else:
                value = (msb - mse) / (msb + (msj - mse) / n)
                lo, hi = lo * k / (1 + lo * (k - 1)), hi * k / (1 + hi * (k - 1))
        p = float(f.sf(F, df1, df2))
    return ICC(kind=kind, value=float(value), ci_low=float(lo), ci_high=float(hi), F=float(F), df1=int(df1),
               df2=int(df2), p=p, n_subjects=n, n_raters=k, level=level)


def cronbach_alpha(items, level: float = 0.95, what: str = "Cronbach's alpha") -> Alpha:
    """Cronbach's alpha of `items` (observations x items): k/(k-1) (1 - sum of the items'
    variances / the variance of their sum), with Feldt's (1965) F interval
    1 - (1 - alpha) F_{(1 -+ level)/2}(n-1, (n-1)(k-1)), as pingouin.cronbach_alpha (which
    rounds the interval to 3 decimals; this does not). Missing cells are refused."""
    from scipy.stats import f

    if not 0 < level < 1:
        raise InvalidInput(f"{what}: level must lie strictly between 0 and 1, not {level}")
    x = _table(items, "observations", "items", what)
    n, k = x.shape
    C = np.cov(x, rowvar=False)
    total = float(C.sum())
    if total <= 0:
        raise InvalidInput(f"{what}: the items' sum does not vary over the observations: alpha is undefined")
    value = k / (k - 1) * (1 - float(np.trace(C)) / total)
    df1, df2 = n - 1, (n - 1) * (k - 1)
    a = 1 - level
    return Alpha(value=float(value), ci_low=float(1 - (1 - value) * f.isf(a / 2, df1, df2)),
                 ci_high=float(1 - (1 - value) * f.isf(1 - a / 2, df1, df2)), n=n, k=k, level=level)


def split_half_items(items, rng: np.random.Generator | None = None, n_splits: int = 200,
                     level: float = 0.95, what: str = "split-half reliability") -> SplitHalf:
    """Spearman-Brown split-half reliability of `items` (observations x items, as
    cronbach_alpha): `split_half` with the items as its rows. Every split into halves where
    there are at most n_splits of them, else n_splits random ones from rng (None: seed 0).

    The interval is alpha's (Feldt's, with k items): 1 - (1 - value) F_{(1 -+ level)/2}(n-1,
    (n-1)(k-1)). One split's stepped-up r would vary like a two-part alpha (df n-1, n-1), but
    the mean over many splits varies about as alpha does: with two-part df the interval held
    98-100% (bench/sim_reliability.py), with alpha's 94-97%."""
    from scipy.stats import f

    if not 0 < level < 1:
        raise InvalidInput(f"{what}: level must lie strictly between 0 and 1, not {level}")
    x = _table(items, "observations", "items", what)
    n, k = x.shape
    if k < 4:
        raise InvalidInput(f"{what}: needs at least 4 items to split into halves of 2, got {k}")
    half = k // 2
    total = comb(k, half) // (2 if 2 * half == k else 1)
    value, r = _split_half(x.T, rng if rng is not None else np.random.default_rng(0), n_splits)
    a = 1 - level
    df1, df2 = n - 1, (n - 1) * (k - 1)
    lo, hi = 1 - (1 - value) * f.isf(a / 2, df1, df2), 1 - (1 - value) * f.isf(1 - a / 2, df1, df2)
    return SplitHalf(value=value, r=r, n_splits=min(total, n_splits), exhaustive=total <= n_splits, n=n, k=k,
                     ci_low=float(lo), ci_high=float(hi), level=level)
