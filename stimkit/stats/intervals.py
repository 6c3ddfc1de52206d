"""Confidence intervals for Caliskan's effect size d, attributes fixed.

Caliskan et al. (2017) define the effect size over the target associations s(w):

    d_C = (mean_X s(x) - mean_Y s(y)) / std_{w in X u Y} s(w)           (ddof 1)

It divides by the SD over X u Y, which holds the difference between the sets as well as
the spread within them. Cohen's d divides by the pooled within-set SD instead:

    d_p = (mean_X s - mean_Y s) / s_p,   s_p^2 = ((n_x-1) var_X + (n_y-1) var_Y) / (n-2)

and the two are tied for any sizes (n = n_x + n_y, h = n_x n_y / n): the sum of squares over
X u Y is (n-2) s_p^2 + h (mean_X - mean_Y)^2, so with `ddof`

    d_C = d_p / sqrt(((n-2) + h d_p^2) / (n-ddof))                        (caliskan_from_cohen)

a strictly increasing map of d_p onto (-sqrt((n-ddof)/h), sqrt((n-ddof)/h)). An interval
for the population value of d_p therefore maps point by point onto one for d_C.

The model (what is random): the attribute stimuli A, B are fixed, as in the permutation
test, so s(w) is a fixed function of the target w; the targets of X and of Y are samples
from two populations of targets with s(w) ~ N(mu_X, sigma^2) and N(mu_Y, sigma^2). The
population Cohen's delta = (mu_X - mu_Y) / sigma. The population d that a sample d_C
estimates is d_C's formula applied to the population at the design's sizes:

    population d = caliskan_from_cohen(delta, n_x, n_y, ddof)

For a balanced design it differs from the large-sample limit delta / sqrt(1 + delta^2 / 4)
(the SD of the 50/50 mixture of the two populations) by a factor sqrt((n-1)/(n-2)) at
delta = 0 (3.5% at 8+8 words, 1% at 24+24) and by less as |delta| grows.

Sentence-level tests (several sentences share a word): the word is the sampling unit.
s = mu + u_word + e_sentence, with u ~ N(0, tau^2) and e ~ N(0, omega^2); sigma^2 =
tau^2 + omega^2 is the SD over sentences that d_C divides by, and the population d is the
formula above at the sentence counts. The word means carry the sampling error: an interval
from the sentences as independent items is too narrow when sentences of a word correlate.

Methods (`bench/bench_coverage.py` measures their coverage):
- nct: the exact interval for delta by inverting the noncentral t distribution of
  t = d_p / sqrt(1/n_x + 1/n_y), df n-2 (Steiger & Fouladi 1997; Cumming & Finch 2001),
  mapped to d_C. Under the model its coverage of the population d is exact.
- gpq-words (sentences, several per word): a generalized confidence interval (Weerahandi
  1993; for this one-way random-effects model, Krishnamoorthy & Mathew 2009, ch. 5) from
  independent pivots: the SE of the difference comes from the word means (df words - 2),
  sigma^2 = tau^2 + omega^2 from the word means and the within-word spread (df sentences -
  words). With U ~ chi2(G-2), V ~ chi2(N-G), Z ~ N(0, 1), k = N / G sentences per word:
      sw2* = (G-2) s_w^2 / U   (variance of a word mean),  om2* = SSE_within / V
      sigma* = sqrt(max(sw2* - om2*/k, 0) + om2*)
      delta* = (Dhat - Z sqrt(sw2*) sqrt(1/G_x + 1/G_y)) / sigma*
  the interval is the (1-level)/2 and (1+level)/2 quantiles of delta*, mapped to d_C at the
  sentence counts. Dhat is the sentence-level difference of means (d_C's numerator); with
  unequal sentences per word k is their mean (an approximation). The quantiles are a Monte
  Carlo integral (stats.pivots): Z integrated out, U and V from 4,096 scrambled Sobol points
  seeded by `rng`, so the ends move with the seed by about 1e-4 in d (at most 3e-4 over 20
  seeds in bench/bench_crossed.py; plain draws moved them by 0.01 at 10,000 draws); swapping
  X and Y negates the interval exactly.
- nct-words: the nct inversion on the word means (df words - 2) rescaled by s_p(word
  means) / s_p(sentences): right at small |d|, too wide at large |d| (it counts the noise of
  the word-mean SD, which d_C's denominator does not have). Kept for comparison.
- bootstrap-percentile | bootstrap-basic | bootstrap-bca: scipy.stats.bootstrap resampling
  the targets of X and of Y separately (whole words with their sentences when `groups`).
  They under-cover at 8 words per set (bench), kept for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import pivots
from .weat import InvalidInput, effect_size

METHODS = ("auto", "nct", "gpq-words", "nct-words", "bootstrap-percentile", "bootstrap-basic", "bootstrap-bca")


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str      # nct | gpq-words | nct-words | bootstrap-*
    scheme: str      # what is modelled or resampled, in words (stored with the result, printed)
    level: float
    estimate: float  # the sample d_C the interval is for


def caliskan_from_cohen(d_p, n_x: int, n_y: int, ddof: int = 1):
    """d_C from Cohen's d_p (pooled within-set SD) for sets of n_x and n_y items (module docstring)."""
    n = n_x + n_y
    h = n_x * n_y / n
    d_p = np.asarray(d_p, dtype=np.float64)
    return d_p / np.sqrt(((n - 2) + h * d_p ** 2) / (n - ddof))


def cohen_from_caliskan(d_c, n_x: int, n_y: int, ddof: int = 1):
    """The inverse map: the d_p whose caliskan_from_cohen is d_c (|d_c| below the bound)."""
    n = n_x + n_y
    h = n_x * n_y / n
    d_c = np.asarray(d_c, dtype=np.float64)
    return d_c * np.sqrt((n - 2) / ((n - ddof) - h * d_c ** 2))


def cohen_d(sx: np.ndarray, sy: np.ndarray) -> float:
    """Cohen's d_p: difference of means over the pooled within-set SD (df n_x + n_y - 2)."""
    return float((np.mean(sx) - np.mean(sy)) / _pooled_sd(sx, sy))


def _pooled_sd(sx, sy) -> float:
    ss = np.sum((sx - np.mean(sx)) ** 2) + np.sum((sy - np.mean(sy)) ** 2)
    return float(np.sqrt(ss / (len(sx) + len(sy) - 2)))


def nct_ncp_interval(t: float, df: float, level: float = 0.95) -> tuple[float, float]:
    """The noncentrality parameters lam_lo < lam_hi with P(T <= t | lam_lo) = (1+level)/2 and
    P(T <= t | lam_hi) = (1-level)/2, T ~ noncentral t(df, lam): the exact interval for lam
    (the cdf falls as lam rises). scipy.special.nctdtrinc inverts the cdf for lam to about
    1e-7; a bracketed root of scipy.stats.nct.cdf near it takes that to 1e-12."""
    return tuple(_invert_nct(t, df, p) for p in ((1 + level) / 2, (1 - level) / 2))


def _invert_nct(t: float, df: float, p: float) -> float:
    """Root of nct.cdf(t, df, lam) = p in lam (the cdf decreases in lam)."""
    # scipy.special's nctdtr is scipy.stats.nct.cdf (both Boost's; equal to the bit, NaN where
    # it gives up), without importing scipy.stats (half a second)
    from scipy import optimize, special  # here: scipy costs a fraction of a second to import
    f = lambda lam: float(special.nctdtr(df, lam, t)) - p  # noqa: E731
    start = float(special.nctdtrinc(df, p, t))
    step = 1e-5 * (1 + abs(start)) if np.isfinite(start) else 1.0
    lo, hi = (start - step, start + step) if np.isfinite(start) else (t - step, t + step)
    flo, fhi = f(lo), f(hi)
    while flo < 0 and abs(lo - t) < 1e3:
        lo, step = lo - step, step * 4
        flo = f(lo)
    while fhi > 0 and abs(hi - t) < 1e3:
        hi, step = hi + step, step * 4
        fhi = f(hi)
    if flo >= 0 >= fhi:
        return float(optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-14))
    if np.isfinite(start):   # scipy's cdf gave NaN far in a tail: keep nctdtrinc's root
        return start
    raise InvalidInput(f"the noncentral t cannot be inverted at t = {t:.4g}, df {df:g}: d is too extreme for an interval")


def _word_ids(groups, n_x: int, what: str) -> tuple[np.ndarray, int]:
    """Consecutive word ids (X's first) from any labels; a word may not be in both sets."""
    groups = np.asarray(groups)
    _, gx = np.unique(groups[:n_x], return_inverse=True)
    _, gy = np.unique(groups[n_x:], return_inverse=True)
    if np.intersect1d(groups[:n_x], groups[n_x:]).size:
        raise InvalidInput(f"{what}: a word id is in both X and Y: the word is the unit and cannot be on both sides")
    n_gx = int(gx.max()) + 1
    return np.concatenate([gx, gy + n_gx]), n_gx


def effect_size_ci(sx, sy, level: float = 0.95, groups=None, method: str = "auto", ddof: int = 1,
                   rng: np.random.Generator | None = None, n_resamples: int = 9999, n_draws: int = pivots.DEFAULT_DRAWS,
                   what: str = "effect size interval") -> Interval:
    """An interval for the population Caliskan d (module docstring), attributes fixed.

    sx, sy: s(w) per target stimulus of X and of Y (after balancing). groups: a word id per
    stimulus, X's first (as `clustered_p`; any hashable labels): the word is then the unit.
    method auto: nct for items (or groups of one stimulus each), gpq-words when a word has
    several stimuli. rng seeds gpq-words and the bootstrap methods (nct is deterministic);
    None: seed 0, so the interval is a function of the data."""
    sx, sy = np.asarray(sx, dtype=np.float64), np.asarray(sy, dtype=np.float64)
    if method not in METHODS:
        raise InvalidInput(f"{what}: method must be one of {', '.join(METHODS)}, not {method!r}")
    if not 0 < level < 1:
        raise InvalidInput(f"{what}: level must lie strictly between 0 and 1, not {level}")
    if len(sx) < 2 or len(sy) < 2:
        raise InvalidInput(f"{what}: an interval for d needs at least 2 targets per set (got {len(sx)} and {len(sy)})")
    if _pooled_sd(sx, sy) == 0:
        raise InvalidInput(f"{what}: s(w) does not vary within X or Y: the sampling error of d cannot be estimated")
    ids, n_gx = (None, 0) if groups is None else _word_ids(groups, len(sx), what)
    if ids is not None and len(ids) != len(sx) + len(sy):
        raise InvalidInput(f"{what}: {len(ids)} word ids for {len(sx) + len(sy)} stimuli")
    clustered = ids is not None and len(np.unique(ids)) < len(ids)
    if method == "auto":
        method = "gpq-words" if clustered else "nct"
    if method == "nct" and clustered:
        raise InvalidInput(f"{what}: several stimuli share a word: use gpq-words (the word is the unit), not nct")
    rng = rng if rng is not None else np.random.default_rng(0)
    estimate = effect_size(sx, sy, ddof)
    if method == "nct":
        lo, hi = _nct(sx, sy, level, ddof)
        scheme = (f"noncentral t for Cohen's d ({len(sx)}+{len(sy)} targets, df {len(sx) + len(sy) - 2}) "
                  "mapped to Caliskan's d; targets sampled, attributes fixed")
    elif method == "gpq-words":
        if not clustered:
            raise InvalidInput(f"{what}: gpq-words needs words with several stimuli; every word has one (use nct)")
        lo, hi, gx, gy = _gpq_words(sx, sy, ids, n_gx, level, ddof, rng, n_draws, what)
        scheme = (f"generalized pivot on word means and within-word spread ({gx}+{gy} words, "
                  f"{len(sx) + len(sy)} sentences), mapped to Caliskan's d; words sampled with their sentences, "
                  "attributes fixed")
    elif method == "nct-words":
        if ids is None:
            ids, n_gx = np.arange(len(sx) + len(sy)), len(sx)
        lo, hi, gx, gy = _nct_words(sx, sy, ids, n_gx, level, ddof, what)
        scheme = (f"noncentral t on word means ({gx}+{gy} words, df {gx + gy - 2}), in sentence SD units, "
                  "mapped to Caliskan's d; words sampled with their sentences, attributes fixed")
    else:
        kind = method.removeprefix("bootstrap-")
        ci = target_bootstrap(sx, sy, ids, level, kind, ddof, rng, n_resamples).confidence_interval
        lo, hi = ci.low, ci.high
        unit = "words with their sentences" if ids is not None else "targets"
        scheme = f"{kind} bootstrap ({n_resamples} resamples) of the {unit} of X and of Y; attributes fixed"
    return Interval(float(lo), float(hi), method, scheme, level, estimate)


def _nct(sx, sy, level, ddof):
    n_x, n_y = len(sx), len(sy)
    scale = np.sqrt(1 / n_x + 1 / n_y)
    lam = nct_ncp_interval(cohen_d(sx, sy) / scale, n_x + n_y - 2, level)
    return caliskan_from_cohen(np.array(lam) * scale, n_x, n_y, ddof)


def _nct_words(sx, sy, ids, n_gx, level, ddof, what):
    s = np.concatenate([sx, sy])
    means = np.bincount(ids, weights=s) / np.bincount(ids)
    mx, my = means[:n_gx], means[n_gx:]
    gx, gy = len(mx), len(my)
    if gx < 2 or gy < 2:
        raise InvalidInput(f"{what}: an interval over words needs at least 2 words per set (got {gx} and {gy})")
    sd_words = _pooled_sd(mx, my)
    if sd_words == 0:
        raise InvalidInput(f"{what}: the word means do not vary within X or Y: the sampling error of d cannot be estimated")
    # the sentence-level difference of means (what d_C's numerator is) over the word-level SE
    diff = float(np.mean(sx) - np.mean(sy))
    scale = np.sqrt(1 / gx + 1 / gy)
    lam = np.array(nct_ncp_interval(diff / (sd_words * scale), gx + gy - 2, level))
    delta = lam * scale * sd_words / _pooled_sd(sx, sy)   # word-mean SD units -> sentence SD units
    lo, hi = caliskan_from_cohen(delta, len(sx), len(sy), ddof)
    return lo, hi, gx, gy


def _gpq_words(sx, sy, ids, n_gx, level, ddof, rng, n_draws, what):
    s = np.concatenate([sx, sy])
    counts = np.bincount(ids)
    means = np.bincount(ids, weights=s) / counts
    mx, my = means[:n_gx], means[n_gx:]
    gx, gy, G, N = len(mx), len(my), len(means), len(s)
    if gx < 2 or gy < 2:
        raise InvalidInput(f"{what}: an interval over words needs at least 2 words per set (got {gx} and {gy})")
    sw2 = _pooled_sd(mx, my) ** 2
    sse = float(np.sum((s - means[ids]) ** 2))
    if sw2 == 0 and sse == 0:
        raise InvalidInput(f"{what}: s(w) does not vary within X or Y: the sampling error of d cannot be estimated")
    u, v = pivots.chi2_draws([G - 2, N - G], n_draws, rng)    # quasi-random; Z integrated out (stats.pivots)
    w2, o2 = (G - 2) * sw2 / u, sse / v
    sigma = np.sqrt(np.maximum(w2 - o2 / (N / G), 0) + o2)
    ends = pivots.quantiles(float(np.mean(sx) - np.mean(sy)), np.sqrt(w2 * (1 / gx + 1 / gy)), sigma,
                            [(1 - level) / 2, (1 + level) / 2])
    lo, hi = caliskan_from_cohen(ends, len(sx), len(sy), ddof)
    return lo, hi, gx, gy


def _d_from_sums(x1, x2, cx, y1, y2, cy, ddof):
    """d_C from sums, sums of squares and counts (vectorised over bootstrap resamples)."""
    n = cx + cy
    mean_all = (x1 + y1) / n
    var_all = (x2 + y2 - n * mean_all ** 2) / (n - ddof)
    return (x1 / cx - y1 / cy) / np.sqrt(var_all)


def target_bootstrap(sx, sy, groups=None, level: float = 0.95, kind: str = "bca", ddof: int = 1,
                     rng: np.random.Generator | None = None, n_resamples: int = 9999):
    """scipy.stats.bootstrap of d_C resampling X's and Y's targets separately (whole words
    with their sentences when `groups`): the scipy BootstrapResult (interval and resamples)."""
    from scipy import stats as sps
    sx, sy = np.asarray(sx, dtype=np.float64), np.asarray(sy, dtype=np.float64)
    ids, n_gx = (None, 0) if groups is None else _word_ids(groups, len(sx), "bootstrap")
    if ids is None:
        def stat(x, y, axis=-1):
            return _d_from_sums(x.sum(axis), (x ** 2).sum(axis), x.shape[axis],
                                y.sum(axis), (y ** 2).sum(axis), y.shape[axis], ddof)
        data = (sx, sy)
    else:  # resample word ids; a word brings its sentences' sums, squares and count
        s = np.concatenate([sx, sy])
        per = np.stack([np.bincount(ids, weights=s), np.bincount(ids, weights=s ** 2),
                        np.bincount(ids).astype(float)])

        def stat(wx, wy, axis=-1):
            px, py = per[:, wx.astype(int)].sum(axis=-1), per[:, wy.astype(int)].sum(axis=-1)
            return _d_from_sums(px[0], px[1], px[2], py[0], py[1], py[2], ddof)
        G = per.shape[1]
        data = (np.arange(n_gx, dtype=float), np.arange(n_gx, G, dtype=float))
    res = sps.bootstrap(data, stat, n_resamples=n_resamples, confidence_level=level, method=kind,
                        random_state=rng if rng is not None else np.random.default_rng(), vectorized=True)
    return res
