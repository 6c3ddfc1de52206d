"""Intervals for Caliskan's d against direct computation, brute-force inversion and invariants.
Coverage is measured in bench/bench_coverage.py, not here."""

import numpy as np
import pytest
from scipy import optimize, stats as sps

from stimkit import stats
from stimkit.errors import InputError
from stimkit.stats.intervals import (caliskan_from_cohen, cohen_d, cohen_from_caliskan, effect_size_ci,
                                     nct_ncp_interval, target_bootstrap)


def sentences(rng, n_words, per_word, delta, icc=0.5):
    groups = np.repeat(np.arange(2 * n_words), per_word)
    s = np.sqrt(icc) * rng.normal(size=2 * n_words)[groups] + np.sqrt(1 - icc) * rng.normal(size=groups.size)
    n = n_words * per_word
    s[:n] += delta
    return s[:n], s[n:], groups


@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("n_x,n_y", [(2, 2), (8, 8), (5, 11), (24, 24), (40, 7)])
def test_cohen_to_caliskan_equals_direct_computation(n_x, n_y, ddof):
    rng = np.random.default_rng(n_x * 100 + n_y + ddof)
    for shift in (0.0, 0.3, 1.0, 3.0, -2.0):
        sx, sy = rng.normal(shift, 1.3, n_x), rng.normal(0, 0.7, n_y)
        # Cohen's d by its definition, pooled variance from np.var
        sp = np.sqrt(((n_x - 1) * np.var(sx, ddof=1) + (n_y - 1) * np.var(sy, ddof=1)) / (n_x + n_y - 2))
        d_p = (sx.mean() - sy.mean()) / sp
        assert cohen_d(sx, sy) == pytest.approx(d_p, rel=1e-12)
        direct = (sx.mean() - sy.mean()) / np.std(np.concatenate([sx, sy]), ddof=ddof)
        assert float(caliskan_from_cohen(d_p, n_x, n_y, ddof)) == pytest.approx(direct, rel=1e-12, abs=1e-12)
        assert stats.effect_size(sx, sy, ddof) == pytest.approx(direct, rel=1e-12, abs=1e-12)
        assert float(cohen_from_caliskan(direct, n_x, n_y, ddof)) == pytest.approx(d_p, rel=1e-10, abs=1e-12)


def test_mapping_is_increasing_and_bounded():
    d_p = np.linspace(-50, 50, 2001)
    for n_x, n_y in ((8, 8), (3, 20)):
        d_c = caliskan_from_cohen(d_p, n_x, n_y)
        bound = np.sqrt((n_x + n_y - 1) / (n_x * n_y / (n_x + n_y)))
        assert np.all(np.diff(d_c) > 0) and np.all(np.abs(d_c) < bound)
    assert np.sqrt(15 / 4) == pytest.approx(1.9364916731)   # the 8+8 bound below the 2 of the spec


def brute_ncp(t, df, p):
    """The noncentrality with P(T <= t) = p, by bisection on scipy's noncentral t cdf."""
    return optimize.brentq(lambda lam: sps.nct.cdf(t, df, lam) - p, t - 6, t + 6, xtol=1e-13)


@pytest.mark.parametrize("t,df", [(0.0, 14), (2.3, 14), (-4.1, 46), (9.0, 14), (1.5, 2), (15.0, 46)])
def test_ncp_interval_equals_brute_force_inversion(t, df):
    lo, hi = nct_ncp_interval(t, df, 0.95)
    assert lo == pytest.approx(brute_ncp(t, df, 0.975), abs=1e-7)
    assert hi == pytest.approx(brute_ncp(t, df, 0.025), abs=1e-7)
    assert lo < t < hi


def test_interval_endpoints_solve_the_noncentral_t_equations():
    rng = np.random.default_rng(3)
    sx, sy = rng.normal(1.2, 1, 9), rng.normal(0, 1, 13)
    iv = effect_size_ci(sx, sy, 0.9)
    assert iv.method == "nct" and iv.level == 0.9
    scale = np.sqrt(1 / 9 + 1 / 13)
    t = cohen_d(sx, sy) / scale
    for end, p in ((iv.low, 0.95), (iv.high, 0.05)):
        lam = float(cohen_from_caliskan(end, 9, 13)) / scale
        assert sps.nct.cdf(t, 20, lam) == pytest.approx(p, abs=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_sample_d_inside_its_interval(seed):
    rng = np.random.default_rng(seed)
    n_x, n_y = rng.integers(3, 30, 2)
    sx, sy = rng.normal(rng.uniform(-3, 3), 1, n_x), rng.normal(0, 1, n_y)
    iv = effect_size_ci(sx, sy)
    assert iv.low < iv.estimate < iv.high and iv.estimate == stats.effect_size(sx, sy)
    cx, cy, g = sentences(rng, int(rng.integers(3, 20)), int(rng.integers(2, 6)), rng.uniform(-2, 2))
    iv = effect_size_ci(cx, cy, groups=g)
    assert iv.method == "gpq-words" and iv.low < stats.effect_size(cx, cy) < iv.high
    iv = effect_size_ci(cx, cy, groups=g, method="nct-words")
    assert iv.low < stats.effect_size(cx, cy) < iv.high


def test_swapping_x_and_y_negates_the_interval():
    rng = np.random.default_rng(5)
    sx, sy = rng.normal(0.8, 1, 8), rng.normal(0, 1, 11)
    a, b = effect_size_ci(sx, sy), effect_size_ci(sy, sx)
    assert (b.low, b.high) == pytest.approx((-a.high, -a.low), abs=1e-10)
    cx, cy, g = sentences(rng, 8, 4, 1.0)
    n = len(cx)
    for method in ("gpq-words", "nct-words"):
        a = effect_size_ci(cx, cy, groups=g, method=method)
        b = effect_size_ci(cy, cx, groups=np.concatenate([g[n:], g[:n]]), method=method)
        assert (b.low, b.high) == pytest.approx((-a.high, -a.low), abs=1e-10)


@pytest.mark.parametrize("clustered", [False, True])
def test_intervals_nest_as_the_level_rises(clustered):
    rng = np.random.default_rng(11)
    sx, sy, g = sentences(rng, 10, 3 if clustered else 1, 0.9)
    ivs = [effect_size_ci(sx, sy, lv, groups=g if clustered else None) for lv in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999)]
    assert {iv.method for iv in ivs} == {"gpq-words" if clustered else "nct"}
    for narrow, wide in zip(ivs, ivs[1:]):
        assert wide.low < narrow.low and narrow.high < wide.high


def test_word_interval_with_one_sentence_per_word_is_the_item_interval():
    rng = np.random.default_rng(2)
    sx, sy = rng.normal(1, 1, 8), rng.normal(0, 1, 8)
    item = effect_size_ci(sx, sy)
    words = effect_size_ci(sx, sy, groups=[f"w{i}" for i in range(16)], method="nct-words")
    assert effect_size_ci(sx, sy, groups=np.arange(16)).method == "nct"
    assert (words.low, words.high) == pytest.approx((item.low, item.high), rel=1e-12)


@pytest.mark.parametrize("method", ["gpq-words", "nct-words"])
def test_word_interval_at_zero_difference(method):
    """At Dhat = 0 the interval is symmetric; nct-words is then +-z_.975 times the SE of the
    word means over the sentence SD (P(T <= 0 | lam) = Phi(-lam)), mapped: a hand computation.
    Both are wider than the item interval that treats the sentences as independent."""
    rng = np.random.default_rng(8)
    cx, cy, g = sentences(rng, 12, 4, 0.0, icc=0.6)
    cx = cx - cx.mean() + cy.mean()                     # the difference of means exactly 0
    iv = effect_size_ci(cx, cy, groups=g, method=method)
    assert iv.low == pytest.approx(-iv.high, abs=1e-12)
    if method == "nct-words":
        s = np.r_[cx, cy]
        mx, my = np.bincount(g, weights=s)[:12] / 4, np.bincount(g, weights=s)[12:] / 4
        se = np.sqrt((np.var(mx, ddof=1) + np.var(my, ddof=1)) / 12)
        sp = np.sqrt((np.var(cx, ddof=1) * 47 + np.var(cy, ddof=1) * 47) / 94)
        assert iv.high == pytest.approx(float(caliskan_from_cohen(sps.norm.ppf(0.975) * se / sp, 48, 48)), rel=1e-9)
    item = effect_size_ci(cx, cy)
    assert iv.high - iv.low > 1.3 * (item.high - item.low)


def test_gpq_with_identical_sentences_is_the_word_level_interval():
    """Every sentence of a word with the word's value (no within-word spread): sigma* is the
    word-mean pivot and delta* the generalized pivot of the word-level delta, whose interval
    is known to match the exact noncentral t one closely (Krishnamoorthy & Mathew 2009)."""
    rng = np.random.default_rng(6)
    wx, wy = rng.normal(1.0, 1, 10), rng.normal(0, 1, 10)
    k = 3
    sx, sy = np.repeat(wx, k), np.repeat(wy, k)
    g = np.repeat(np.arange(20), k)
    gpq = effect_size_ci(sx, sy, groups=g)
    words = effect_size_ci(wx, wy)
    got = cohen_from_caliskan(np.array([gpq.low, gpq.high]), 30, 30)     # back to delta
    want = cohen_from_caliskan(np.array([words.low, words.high]), 10, 10)
    assert got == pytest.approx(want, abs=0.04)


def test_bootstrap_over_words_of_one_sentence_equals_bootstrap_over_items():
    rng = np.random.default_rng(4)
    sx, sy = rng.normal(1, 1, 9), rng.normal(0, 1, 7)
    a = target_bootstrap(sx, sy, None, 0.95, "bca", rng=np.random.default_rng(1), n_resamples=500)
    b = target_bootstrap(sx, sy, np.arange(16), 0.95, "bca", rng=np.random.default_rng(1), n_resamples=500)
    assert np.allclose(a.bootstrap_distribution, b.bootstrap_distribution, rtol=1e-12)
    assert tuple(a.confidence_interval) == pytest.approx(tuple(b.confidence_interval), rel=1e-12)
    c = effect_size_ci(sx, sy, method="bootstrap-percentile", rng=np.random.default_rng(1), n_resamples=500)
    d = effect_size_ci(sx, sy, method="bootstrap-percentile", rng=np.random.default_rng(1), n_resamples=500)
    assert c == d and "percentile bootstrap" in c.scheme and "attributes fixed" in c.scheme


def test_schemes_say_what_is_modelled():
    rng = np.random.default_rng(0)
    sx, sy, g = sentences(rng, 8, 4, 1.0)
    assert effect_size_ci(sx, sy, groups=g).scheme == (
        "generalized pivot on word means and within-word spread (8+8 words, 64 sentences), mapped to "
        "Caliskan's d; words sampled with their sentences, attributes fixed")
    a, b = effect_size_ci(sx, sy, groups=g), effect_size_ci(sx, sy, groups=g, rng=np.random.default_rng(0))
    assert a == b   # no rng: seed 0, the interval is a function of the data
    assert effect_size_ci(sx[:8], sy[:8]).scheme == (
        "noncentral t for Cohen's d (8+8 targets, df 14) mapped to Caliskan's d; targets sampled, attributes fixed")


def test_bad_input_is_refused():
    sx, sy = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])
    with pytest.raises(InputError, match="both X and Y"):
        effect_size_ci(sx, sy, groups=["a", "b", "c", "c", "d", "e"])
    with pytest.raises(InputError, match="gpq-words"):
        effect_size_ci(sx, sy, groups=["a", "a", "b", "c", "d", "e"], method="nct")
    with pytest.raises(InputError, match="level"):
        effect_size_ci(sx, sy, level=95)
    with pytest.raises(InputError, match="at least 2"):
        effect_size_ci(sx[:1], sy)
    with pytest.raises(InputError, match="does not vary"):
        effect_size_ci(np.ones(3), np.zeros(3))
    with pytest.raises(InputError, match="2 words"):
        effect_size_ci(sx, sy, groups=["a", "a", "a", "c", "d", "e"])
    with pytest.raises(InputError, match="every word has one"):
        effect_size_ci(sx, sy, groups=["a", "b", "c", "d", "e", "f"], method="gpq-words")


def test_ddof_0_scales_the_interval_as_it_scales_d():
    """std with ddof 0 is sqrt((n-1)/n) times the ddof 1 one: d and both ends scale by its inverse."""
    rng = np.random.default_rng(9)
    sx, sy, g = sentences(rng, 6, 3, 0.8)
    for groups in (None, g):
        one, zero = effect_size_ci(sx, sy, groups=groups), effect_size_ci(sx, sy, groups=groups, ddof=0)
        f = np.sqrt(36 / 35)
        assert zero.estimate == pytest.approx(one.estimate * f, rel=1e-12)
        assert (zero.low, zero.high) == pytest.approx((one.low * f, one.high * f), rel=1e-12)


def test_extreme_separation_still_gives_an_interval_around_d():
    """|t| in the hundreds, where scipy's noncentral t cdf turns NaN in the far tail."""
    sx = np.array([1.0, 1.001, 0.999, 1.0002, 1.0004])
    sy = np.array([0.0, 0.001, -0.001, 0.0003, -0.0002])
    iv = effect_size_ci(sx, sy)
    bound = np.sqrt(9 / 2.5)
    assert iv.low < iv.estimate < iv.high < bound
    lo, hi = nct_ncp_interval(200.0, 46)
    assert lo < 200 < hi and sps.nct.cdf(200.0, 46, lo) == pytest.approx(0.975, abs=1e-6)
