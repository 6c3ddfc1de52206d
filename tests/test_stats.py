"""The statistics against brute force, hand computations and invariants."""

from itertools import combinations
from math import comb

import numpy as np
import pytest
from scipy import stats as sps

from stimkit import stats


def brute_p(values, n, alternative="greater"):
    """Enumerate every equal-size split with a Python loop, as the definition reads."""
    values = list(values)
    N = len(values)
    observed = sum(values[:n]) - sum(values[n:])
    hits = total = 0
    for xi in combinations(range(N), n):
        stat = sum(values[i] for i in xi) - sum(values[i] for i in range(N) if i not in xi)
        total += 1
        if alternative == "greater":
            hits += stat >= observed - 1e-12
        elif alternative == "less":
            hits += stat <= observed + 1e-12
        else:
            hits += abs(stat) >= abs(observed) - 1e-12
    return hits / total


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_p_equals_brute_force(alternative, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=12) + np.r_[np.full(6, 0.5), np.zeros(6)]
    got = stats.permutation_p(values, 6, alternative)
    assert got.method == "exact" and got.samples == comb(12, 6) == 924
    assert got.p == pytest.approx(brute_p(values, 6, alternative), abs=1e-15)


def test_exact_p_counts_ties_non_strictly():
    values = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])  # many splits tie with the observed one
    assert stats.permutation_p(values, 3).p == pytest.approx(brute_p(values, 3))
    assert stats.permutation_p(values, 3).p == pytest.approx(10 / 20)


def test_smallest_possible_p():
    values = np.r_[np.arange(8, 16), np.arange(8)].astype(float)  # X holds the 8 largest values
    exact = stats.permutation_p(values, 8)
    assert exact.partitions == 12_870 and exact.p == pytest.approx(1 / 12_870)
    big = np.r_[np.full(30, 5.0) + np.arange(30) * 1e-3, np.zeros(30)]
    sampled = stats.permutation_p(big, 30, budget=5_000, rng=np.random.default_rng(0))
    assert sampled.method == "sampled" and sampled.p == 1 / 5_000


def test_sampled_p_agrees_with_exact():
    rng = np.random.default_rng(5)
    values = rng.normal(size=18) + np.r_[np.full(9, 0.4), np.zeros(9)]
    exact = stats.permutation_p(values, 9, method="exact")
    sampled = stats.permutation_p(values, 9, method="sampled", budget=100_000, rng=np.random.default_rng(1))
    se = np.sqrt(exact.p * (1 - exact.p) / 100_000)
    assert exact.partitions == 48_620
    assert abs(sampled.p - exact.p) < 5 * se + 1e-5


def test_parametric_p_is_a_normal_fit():
    rng = np.random.default_rng(3)
    values = rng.normal(size=40) + np.r_[np.full(20, 0.3), np.zeros(20)]
    got = stats.permutation_p(values, 20, method="parametric", budget=20_000, rng=np.random.default_rng(2))
    # under the null, the sum of a random half has mean n*mean and variance n*n/(N*(N-1)) * sum (v - mean)^2 ... times 4 for the statistic
    N, n = 40, 20
    var_sum = n * (N - n) / (N * (N - 1)) * np.sum((values - values.mean()) ** 2)
    stat = 2 * values[:n].sum() - values.sum()
    expected = sps.norm.sf(stat, 0, 2 * np.sqrt(var_sum))
    assert got.method == "parametric" and got.p == pytest.approx(expected, rel=0.05)


def test_sampled_p_is_reproducible_with_a_seed():
    values = np.random.default_rng(0).normal(size=100)
    a = stats.permutation_p(values, 50, rng=np.random.default_rng(9), budget=20_000)
    b = stats.permutation_p(values, 50, rng=np.random.default_rng(9), budget=20_000)
    c = stats.permutation_p(values, 50, rng=np.random.default_rng(10), budget=20_000)
    assert a == b and a.p != c.p


def test_effect_size_by_hand():
    # 2-d vectors: A = (1, 0), B = (0, 1); cos(x, A) - cos(x, B) by hand
    A, B = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    X = np.array([[1.0, 0.0], [3.0, 4.0]])    # s = 1, 3/5 - 4/5 = -0.2
    Y = np.array([[0.0, 2.0], [1.0, 1.0]])    # s = -1, 0
    s = stats.association(np.concatenate([X, Y]), A, B)
    assert np.allclose(s, [1.0, -0.2, -1.0, 0.0])
    sx, sy = s[:2], s[2:]
    assert stats.test_statistic(sx, sy) == pytest.approx(0.8 - (-1.0))
    pooled_sd = np.sqrt(((1 - -0.05) ** 2 + (-0.2 - -0.05) ** 2 + (-1 - -0.05) ** 2 + (0 - -0.05) ** 2) / 3)
    assert stats.effect_size(sx, sy) == pytest.approx((0.4 - -0.5) / pooled_sd)
    assert stats.effect_size(sx, sy, ddof=0) == pytest.approx((0.4 - -0.5) / np.std(s))


def test_swapping_targets_or_attributes_negates_d():
    rng = np.random.default_rng(4)
    X, Y, A, B = (rng.normal(size=(10, 20)) for _ in range(4))
    d = lambda X, Y, A, B: stats.effect_size(stats.association(X, A, B), stats.association(Y, A, B))  # noqa: E731
    assert d(Y, X, A, B) == pytest.approx(-d(X, Y, A, B))
    assert d(X, Y, B, A) == pytest.approx(-d(X, Y, A, B))
    assert d(Y, X, B, A) == pytest.approx(d(X, Y, A, B))
    for seed in range(20):  # |d| <= 2 always
        r = np.random.default_rng(seed)
        assert abs(d(*(r.normal(size=(4, 3)) for _ in range(4)))) <= 2


def test_clustered_p_equals_word_level_enumeration():
    rng = np.random.default_rng(7)
    groups = np.array([0, 0, 0, 1, 1, 2, 3, 3, 4, 4, 4, 5])   # 3 words in X, 3 in Y, uneven sentences
    values = rng.normal(size=12) + (groups < 3) * 0.8
    got = stats.clustered_p(values, groups, 3)
    observed = values[groups < 3].mean() - values[groups >= 3].mean()
    hits = 0
    for xi in combinations(range(6), 3):
        inx = np.isin(groups, xi)
        hits += values[inx].mean() - values[~inx].mean() >= observed - 1e-12
    assert got.method == "exact-clustered" and got.p == pytest.approx(hits / 20)


def test_bootstrap_ci_is_seeded_and_brackets_d():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(30, 16)) + 0.3, rng.normal(size=(30, 16))
    A, B = rng.normal(size=(20, 16)) + 0.3, rng.normal(size=(20, 16))
    W = stats.unit_rows(np.concatenate([X, Y]))
    sim_a, sim_b = W @ stats.unit_rows(A).T, W @ stats.unit_rows(B).T
    d = stats.effect_size(*np.split(sim_a.mean(1) - sim_b.mean(1), 2))
    lo, hi = stats.bootstrap_d(sim_a, sim_b, 30, 500, np.random.default_rng(3))
    assert lo < d < hi and hi - lo < 2
    assert (lo, hi) == stats.bootstrap_d(sim_a, sim_b, 30, 500, np.random.default_rng(3))
