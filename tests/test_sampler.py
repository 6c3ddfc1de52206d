"""The permutation sampler: every k-subset equally likely, rows independent, runs reproducible."""

import dataclasses
from math import comb

import numpy as np
import pytest
from scipy import stats as sps

from stimkit.stats import sampler
from stimkit.stats.sampler import Layout, SplitPlan


def subset_codes(sums):
    """Values 2**i make each subset's sum its bit code."""
    return np.rint(sums).astype(np.int64)


def assert_uniform_over_subsets(sums, N, k):
    codes, counts = np.unique(subset_codes(sums), return_counts=True)
    assert len(codes) == comb(N, k), "some subsets never drawn"
    assert all(bin(c).count("1") == k for c in codes), "a row without exactly k items"
    assert sps.chisquare(counts).pvalue > 1e-4


def test_split_sampler_draws_every_subset_equally_often():
    assert SplitPlan.build(np.zeros((8, 1)), 4) is not None        # this size takes the split path
    sums = sampler.subset_sums(2.0 ** np.arange(8), 4, 140_000, np.random.default_rng(0))
    assert_uniform_over_subsets(sums, 8, 4)


def test_odd_sizes_split_into_unequal_halves():
    assert SplitPlan.build(np.zeros((9, 1)), 4) is not None
    sums = sampler.subset_sums(2.0 ** np.arange(9), 4, 126_000, np.random.default_rng(1))
    assert_uniform_over_subsets(sums, 9, 4)


def test_flip_sampler_draws_every_subset_equally_often():
    assert SplitPlan.build(np.zeros((16, 1)), 3) is None           # k far from M/2: flips
    sums = sampler.subset_sums(2.0 ** np.arange(16), 3, 112_000, np.random.default_rng(2))
    assert_uniform_over_subsets(sums, 16, 3)
    direct = sampler.flip_subset_sums((2.0 ** np.arange(8))[:, None], 4, 70_000, np.random.SFC64(3))
    assert_uniform_over_subsets(direct[:, 0], 8, 4)


@pytest.mark.parametrize("M, k", [(8, 4), (13, 3), (30, 15), (70, 33)])
def test_subset_masks_are_uniform_k_subsets_in_item_order(M, k):
    masks = sampler.subset_masks(M, k, 40_000, np.random.default_rng(4))
    assert masks.shape == (40_000, M) and set(np.unique(masks)) == {0, 1} and (masks.sum(axis=1) == k).all()
    # each item in k/M of the rows (items beyond one 12-item lane and one 64-bit word included)
    assert np.abs(masks.mean(axis=0) - k / M).max() < 5 * np.sqrt(k / M * (1 - k / M) / 40_000)
    if comb(M, k) <= 300:   # and every subset as often
        assert_uniform_over_subsets(masks @ 2.0 ** np.arange(M), M, k)
    again = sampler.subset_masks(M, k, 40_000, np.random.default_rng(4))
    assert np.array_equal(masks, again)


def test_pools_that_run_short_are_topped_up_without_bias():
    plan = SplitPlan.build((2.0 ** np.arange(8))[:, None], 4)
    plan.law = dataclasses.replace(plan.law, factors=(0.3, 0.3))   # pools far too small: most rows need several rounds
    sums = plan.sums(70_000, [4, 5, 6])[:, 0]
    assert_uniform_over_subsets(sums, 8, 4)


def test_batches_fill_every_row():
    plan = SplitPlan.build(np.ones((30, 1)), 15)
    plan.batch = 1_000
    sums = plan.sums(5_500, [7, 8, 9])[:, 0]
    assert sums.shape == (5_500,) and (sums == 15).all()


def test_inclusion_rates_and_split_sizes_at_a_middle_size():
    """N = 30: every item in with rate k/N, every pair with k(k-1)/(N(N-1)), and |S n A|
    hypergeometric."""
    N, k, rows = 30, 15, 60_000
    picks = sampler.subset_sums(np.eye(N), k, rows, np.random.default_rng(3))
    assert set(np.unique(picks)) == {0.0, 1.0} and (picks.sum(axis=1) == k).all()
    single, pair = k / N, k * (k - 1) / (N * (N - 1))
    assert np.abs(picks.mean(axis=0) - single).max() < 5 * np.sqrt(single * (1 - single) / rows)
    co = (picks.T @ picks) / rows
    off = co[~np.eye(N, dtype=bool)]
    assert np.abs(off - pair).max() < 5 * np.sqrt(pair * (1 - pair) / rows)
    in_a = picks[:, : N // 2].sum(axis=1).astype(int)
    observed = np.bincount(in_a, minlength=N // 2 + 1)
    expected = sps.hypergeom.pmf(np.arange(N // 2 + 1), N, N // 2, k) * rows
    keep = expected > 5
    assert sps.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-4


def test_sentence_size_sums_have_the_null_mean_and_variance():
    N, k = 701, 350
    values = np.random.default_rng(4).normal(size=N)
    sums = sampler.subset_sums(np.column_stack([values, np.ones(N)]), k, 100_000, np.random.default_rng(5))
    assert (sums[:, 1] == k).all()
    mean = k * values.mean()
    var = k * (N - k) / (N - 1) * values.var()     # finite-population variance of a k-subset sum
    assert abs(sums[:, 0].mean() - mean) < 5 * np.sqrt(var / 100_000)
    assert sums[:, 0].var() == pytest.approx(var, rel=0.02)


@pytest.mark.parametrize("N,k", [(700, 350), (13, 6), (50, 22), (3, 1)])
def test_sizes_in_a_are_drawn_by_inverting_the_cdf(N, k):
    plan = SplitPlan.build(np.zeros((N, 1)), k)
    u = np.r_[0.0, 1e-300, 0.5, 1 - 2**-53, plan.law.cdf[plan.law.cdf < 1], np.random.default_rng(6).random(200_000)]
    assert (plan.draw_sizes_in_a(u) == np.searchsorted(plan.law.cdf, u, side="right")).all()


@pytest.mark.parametrize("M", [1, 11, 12, 13, 48, 49, 350])
def test_layout_puts_each_item_on_its_own_bit_and_sums_by_table(M):
    layout = Layout(M)
    assert int(np.bitwise_count(layout.masks).sum()) == M
    words = np.zeros((layout.words, 1), np.uint64)
    np.bitwise_or.at(words[:, 0], layout.item_word, layout.item_bit)
    assert (words[:, 0] == layout.masks).all()     # the M item bits are exactly the masked bits
    rng = np.random.default_rng(M)
    values = rng.normal(size=(M, 2))
    picks = [rng.random(M) < 0.5 for _ in range(20)]
    rows = np.zeros((layout.words, len(picks)), np.uint64)
    for r, pick in enumerate(picks):
        np.bitwise_or.at(rows[:, r], layout.item_word[pick], layout.item_bit[pick])
    assert np.allclose(layout.sums(rows, layout.tables(values)), [values[p].sum(axis=0) for p in picks])
    assert (layout.sizes(rows) == [p.sum() for p in picks]).all()


def test_same_seed_same_sums_whatever_ran_before():
    values = np.random.default_rng(7).normal(size=200)
    first = sampler.subset_sums(values, 100, 30_000, np.random.default_rng(11))
    sampler.subset_sums(values, 100, 5_000, np.random.default_rng(12))   # other work in between
    again = sampler.subset_sums(values, 100, 30_000, np.random.default_rng(11))
    other = sampler.subset_sums(values, 100, 30_000, np.random.default_rng(13))
    assert np.array_equal(first, again) and not np.array_equal(first, other)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="cannot draw 5 of 4"):
        sampler.subset_sums(np.zeros(4), 5, 10, np.random.default_rng(0))
