"""The difference test for two effect sizes and the verdicts of consistency checks.
Its level is measured in bench/bench_difference.py, not here."""

import numpy as np
import pytest
from scipy import stats as sps

from stimkit import stats
from stimkit.errors import InputError
from stimkit.stats.difference import classify, difference_test


def jackknife_var(sx, sy, only=None):
    """One result's delete-one-target jackknife variance of d, as the textbook writes it,
    a stratum (X, Y) at a time (`only`: that stratum's part)."""
    v = 0.0
    for own, other, first in ((sx, sy, True), (sy, sx, False)):
        if only is not None and only != ("x" if first else "y"):
            continue
        m = len(own)
        th = np.array([stats.effect_size(np.delete(own, i), other) if first else
                       stats.effect_size(other, np.delete(own, i)) for i in range(m)])
        v += (m - 1) / m * np.sum((th - th.mean()) ** 2)
    return v


def planted(n, shift, noise=0.0, seed=0):
    """Deterministic normal scores (no sampling luck) for X shifted by `shift`, Y at 0."""
    q = sps.norm.ppf((np.arange(n) + 0.5) / n)
    rng = np.random.default_rng(seed)
    return q + shift + noise * rng.normal(size=n), q[::-1] + noise * rng.normal(size=n)


def test_independent_results_variance_is_the_sum_of_their_jackknife_variances():
    rng = np.random.default_rng(0)
    sx1, sy1 = rng.normal(1, 1, 8), rng.normal(0, 1, 10)
    sx2, sy2 = rng.normal(0.5, 2, 12), rng.normal(0, 2, 9)
    res = difference_test(sx1, sy1, sx2, sy2)
    assert res.shared == 0
    assert res.diff == pytest.approx(stats.effect_size(sx1, sy1) - stats.effect_size(sx2, sy2), rel=1e-12)
    assert res.se ** 2 == pytest.approx(jackknife_var(sx1, sy1) + jackknife_var(sx2, sy2), rel=1e-10)
    # the t reference and its interval, by hand
    assert res.p == pytest.approx(2 * sps.t.sf(abs(res.diff) / res.se, res.df), rel=1e-12)
    q = sps.t.ppf(0.975, res.df)
    assert (res.low, res.high) == pytest.approx((res.diff - q * res.se, res.diff + q * res.se), rel=1e-12)
    # Satterthwaite over the four strata (X1, Y1, X2, Y2), capped at the smaller result's units - 2
    parts = [jackknife_var(sx1, sy1, "x"), jackknife_var(sx1, sy1, "y"),
             jackknife_var(sx2, sy2, "x"), jackknife_var(sx2, sy2, "y")]
    satterthwaite = sum(parts) ** 2 / sum(v ** 2 / (m - 1) for v, m in zip(parts, (8, 10, 12, 9)))
    assert res.df == pytest.approx(min(satterthwaite, 16), rel=1e-10)


def test_shared_words_are_deleted_from_both_results_at_once():
    """Two encoders, the same 8+8 words: the jackknife deletes a word from both; by brute force."""
    rng = np.random.default_rng(1)
    z = rng.normal(size=16)
    s1 = z + np.r_[np.ones(8), np.zeros(8)]
    s2 = 0.8 * z + 0.6 * rng.normal(size=16) + np.r_[np.full(8, 0.7), np.zeros(8)]
    words = [f"w{i}" for i in range(16)]
    res = difference_test(s1[:8], s1[8:], s2[:8], s2[8:], words, words)
    assert res.shared == 16
    v = 0.0
    for stratum in (range(8), range(8, 16)):
        th = np.array([stats.effect_size(np.delete(s1, i)[:7 if i < 8 else 8], np.delete(s1, i)[7 if i < 8 else 8:])
                       - stats.effect_size(np.delete(s2, i)[:7 if i < 8 else 8], np.delete(s2, i)[7 if i < 8 else 8:])
                       for i in stratum])
        v += 7 / 8 * np.sum((th - th.mean()) ** 2)
    assert res.se ** 2 == pytest.approx(v, rel=1e-10)
    # pairing the words removes their shared noise: the paired SE is below the independent one
    assert res.se < difference_test(s1[:8], s1[8:], s2[:8], s2[8:]).se


def test_word_test_and_its_sentence_test_pair_by_word():
    rng = np.random.default_rng(2)
    w = rng.normal(size=16) + np.r_[np.ones(8), np.zeros(8)]
    words = np.arange(16)
    sent_words = np.repeat(words, 3)
    sent = w[sent_words] + 0.3 * rng.normal(size=48)
    res = difference_test(w[:8], w[8:], sent[:24], sent[24:], words, sent_words)
    assert res.shared == 16 and res.se < difference_test(w[:8], w[8:], sent[:24], sent[24:], words, None).se


def test_identical_results_do_not_differ_and_swapping_negates():
    rng = np.random.default_rng(3)
    sx, sy = rng.normal(1, 1, 8), rng.normal(0, 1, 8)
    words = list(range(16))
    same = difference_test(sx, sy, sx, sy, words, words)
    assert (same.diff, same.se, same.p) == (0.0, 0.0, 1.0)
    sx2, sy2 = rng.normal(0.2, 1, 8), rng.normal(0, 1, 8)
    a, b = difference_test(sx, sy, sx2, sy2), difference_test(sx2, sy2, sx, sy)
    assert b.diff == pytest.approx(-a.diff) and (b.low, b.high) == pytest.approx((-a.high, -a.low))
    assert b.p == pytest.approx(a.p)


def test_same_direction_either_side_of_alpha_is_a_note_not_a_violation():
    # the weat6b / sent-weat6b: d 1.05 / 0.86, p 0.015 / 1e-05 at alpha 0.01
    sx1, sy1 = planted(8, 1.2)
    sx2, sy2 = planted(32, 1.0, noise=0.3, seed=1)
    diff = difference_test(sx1, sy1, sx2, sy2)
    assert diff.p > 0.01
    v = classify(1.05, 0.015, 0.86, 1e-05, 0.01, diff.p)
    assert v.verdict == "note"
    assert "different decisions at alpha" in v.reason and "orders of magnitude" in v.reason
    # weat3b / sent-weat3b: d 0.01 / -0.10, p 0.49 / 0.84: opposite signs, neither significant
    v = classify(0.01, 0.49, -0.10, 0.84, 0.01, 0.7)
    assert v.verdict == "note" and "opposite signs" in v.reason
    assert classify(1.0, 0.001, 0.9, 0.002, 0.01, 0.8).verdict == "consistent"


def test_opposite_significant_effects_are_a_violation():
    sx1, sy1 = planted(24, 1.5)
    sy2, sx2 = planted(24, 1.5, noise=0.2, seed=2)           # the reverse association
    p1 = stats.permutation_p(np.r_[sx1, sy1], 24, "two-sided", rng=np.random.default_rng(0)).p
    p2 = stats.permutation_p(np.r_[sx2, sy2], 24, "two-sided", rng=np.random.default_rng(0)).p
    d1, d2 = stats.effect_size(sx1, sy1), stats.effect_size(sx2, sy2)
    assert d1 > 0 > d2 and p1 <= 0.01 and p2 <= 0.01
    # a violation even without the difference test's p
    assert classify(d1, p1, d2, p2, 0.01, None) == classify(d1, p1, d2, p2, 0.01, 0.5)
    assert classify(d1, p1, d2, p2, 0.01, None).verdict == "violation"
    assert "opposite signs" in classify(d1, p1, d2, p2, 0.01, None).reason


def test_effects_that_differ_beyond_their_joint_uncertainty_are_a_violation():
    """Same direction, both significant (no heuristic fires but 'd differ by 0.5'): only the
    difference test makes it a violation."""
    sx1, sy1 = planted(24, 2.6)
    sx2, sy2 = planted(24, 0.9, noise=0.2, seed=3)
    d1, d2 = stats.effect_size(sx1, sy1), stats.effect_size(sx2, sy2)
    p1 = stats.permutation_p(np.r_[sx1, sy1], 24, rng=np.random.default_rng(0)).p
    p2 = stats.permutation_p(np.r_[sx2, sy2], 24, rng=np.random.default_rng(0)).p
    assert d1 > d2 > 0 and p1 <= 0.01 and p2 <= 0.01
    diff = difference_test(sx1, sy1, sx2, sy2)
    assert diff.low > 0 and diff.p <= 0.01
    v = classify(d1, p1, d2, p2, 0.01, diff.p)
    assert v.verdict == "violation" and "joint uncertainty" in v.reason
    # without the test, the same pair is only a note
    assert classify(d1, p1, d2, p2, 0.01, None).verdict == "note"


def test_bad_units_are_refused():
    sx, sy = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])
    with pytest.raises(InputError, match="both X and Y"):
        difference_test(sx, sy, sx, sy, ["a", "b", "c", "a", "d", "e"])
    with pytest.raises(InputError, match="unit labels"):
        difference_test(sx, sy, sx, sy, ["a", "b"])
    with pytest.raises(InputError, match="fewer than 2 units"):
        difference_test(sx, sy, sx, sy, ["a", "a", "a", "c", "d", "e"])
