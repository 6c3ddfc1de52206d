"""Leave-one-word-out p's on shared draws (stats.influence.shared_sampled_p): each column's p
is its own test's, within its stated Monte Carlo error of the exact p recomputed from scratch."""

import numpy as np
import pytest

from stimkit import stats
from stimkit.stats.influence import shared_sampled_p, word_influence


def brute(X, Y, A, B, words, role, word, alternative):
    """The exact p of the test with one word's stimuli taken out of its role, from the vectors."""
    keep = {r: np.array([w != word or r != role for w in words[r]]) for r in "XYAB"}
    x, y, a, b = X[keep["X"]], Y[keep["Y"]], A[keep["A"]], B[keep["B"]]
    s = stats.association(np.vstack([x, y]), a, b)
    return stats.permutation_p(s, len(x), alternative, "exact").p


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_every_words_shared_draw_p_is_within_its_monte_carlo_error_of_the_exact_p(alternative):
    rng = np.random.default_rng(8)
    X, Y = rng.normal(size=(10, 6)) + 0.4, rng.normal(size=(10, 6))
    A, B = rng.normal(size=(9, 6)) + 0.2, rng.normal(size=(8, 6))
    # words of one, two and three stimuli, so columns leave different numbers of targets
    words = {"X": ["x0", "x0", "x0", "x1", "x1", "x2", "x3", "x4", "x5", "x6"], "Y": [f"y{i // 2}" for i in range(10)],
             "A": [f"a{i // 3}" for i in range(9)], "B": [f"b{i}" for i in range(8)]}
    W = stats.unit_rows(np.vstack([X, Y]))
    found = word_influence(W @ stats.unit_rows(A).T, W @ stats.unit_rows(B).T, 10, *words.values(),
                           alternative=alternative, method="sampled", sample_budget=20_000,
                           rng=np.random.default_rng(1))
    assert set(found.p_method) == {"sampled"} and np.all(found.draws == 20_000)
    exact = np.array([brute(X, Y, A, B, words, r, w, alternative) for r, w in zip(found.role, found.word)])
    se = np.sqrt(exact * (1 - exact) / 20_000)
    assert np.all(np.abs(found.p - exact) <= 4 * se + 1 / 20_000), (found.p, exact)
    assert found.p_se == pytest.approx(np.sqrt(found.p * (1 - found.p) / 20_000))
    # the p's are spread over (0, 1), so the check has teeth
    assert np.ptp(exact) > 0.1


def test_shared_draws_agree_with_permutation_p_on_one_column():
    """One attribute column: the same law as pvalues.permutation_p's sampled p (not the same
    draws): both within Monte Carlo error of the exact p; the observed counts once."""
    rng = np.random.default_rng(2)
    s = rng.normal(size=16) + np.r_[np.full(8, 0.5), np.zeros(8)]
    exact = stats.permutation_p(s, 8, "greater", "exact").p
    got = shared_sampled_p(s, 8, [(s, None, 8)], "greater", 40_000, np.random.default_rng(3))[0]
    assert abs(got - exact) <= 4 * np.sqrt(exact * (1 - exact) / 40_000)
    # the largest s(w) of X left out: the column is s without it, X keeping 7
    left = int(np.argmax(s[:8]))
    without = np.delete(s, left)
    want = stats.permutation_p(without, 7, "greater", "exact").p
    got = shared_sampled_p(s, 8, [(None, np.array([left]), 7)], "greater", 40_000, np.random.default_rng(4))[0]
    assert abs(got - want) <= 4 * np.sqrt(want * (1 - want) / 40_000) and want > exact
    # every draw reaches a statistic at most the observed one's: p = 1 for `less` with X the smallest
    low = np.sort(s)
    assert shared_sampled_p(low, 8, [(low, None, 8)], "less", 500, np.random.default_rng(5))[0] == pytest.approx(1 / 500)


def test_exact_p_s_have_no_monte_carlo_error_and_a_normal_fit_states_none():
    rng = np.random.default_rng(9)
    X, Y, A, B = (rng.normal(size=(n, 5)) for n in (6, 6, 4, 4))
    W = stats.unit_rows(np.vstack([X, Y]))
    words = ([f"x{i}" for i in range(6)], [f"y{i}" for i in range(6)], [f"a{i}" for i in range(4)],
             [f"b{i}" for i in range(4)])
    sims = W @ stats.unit_rows(A).T, W @ stats.unit_rows(B).T
    exact = word_influence(*sims, 6, *words, alternative="greater", method="exact")
    assert np.all(exact.p_se == 0) and set(exact.p_method) == {"exact"}
    normal = word_influence(*sims, 6, *words, alternative="greater", method="parametric", sample_budget=2_000,
                            rng=np.random.default_rng(1))
    assert set(normal.p_method) == {"parametric"} and np.all(np.isnan(normal.p_se)) and np.all(np.isfinite(normal.p))
