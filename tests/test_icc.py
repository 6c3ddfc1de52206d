"""stats.reliability's ICCs, Cronbach's alpha and split-half reliability against independent
oracles: pingouin (intraclass_corr, cronbach_alpha) to 1e-10, Shrout & Fleiss's (1979)
published table, and Spearman-Brown worked split by split."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from stimkit.errors import StimkitError
from stimkit.stats import reliability as R
from stimkit.stats.weat import InvalidInput

pg = pytest.importorskip("pingouin")
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword")   # pingouin 0.7 on pandas 3: its own dropna
PG_ROWS = dict(zip(R.ICC_KINDS, range(6)))   # pingouin's row order: ICC(1,1), (A,1), (C,1), (1,k), (A,k), (C,k)


@pytest.fixture(autouse=True)
def _unrounded(monkeypatch):
    """pingouin rounds its ICC interval to 2 decimals by default: compare the full values."""
    monkeypatch.setitem(pg.options, "round.column.CI95", None)


def _pingouin_icc(x: np.ndarray) -> pd.DataFrame:
    n, k = x.shape
    long = pd.DataFrame({"target": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "score": x.ravel()})
    return pg.intraclass_corr(data=long, targets="target", raters="rater", ratings="score")


def _ratings(seed: int, n: int, k: int) -> np.ndarray:
    """Subjects with a real spread, raters with offsets, noise: ICCs well inside (0, 1)."""
    rng = np.random.default_rng(seed)
    return rng.normal(0, 1.5, (n, 1)) + rng.normal(0, 0.7, (1, k)) + rng.normal(0, 1, (n, k))


def _assert_same_as_pingouin(x: np.ndarray) -> None:
    ref = _pingouin_icc(x)
    for kind, row in PG_ROWS.items():
        got = R.icc(x, kind)
        want = ref.iloc[row]
        assert got.value == pytest.approx(want["ICC"], abs=1e-10), kind
        assert got.ci_low == pytest.approx(want["CI95"][0], abs=1e-10), kind
        assert got.ci_high == pytest.approx(want["CI95"][1], abs=1e-10), kind
        assert got.F == pytest.approx(want["F"], rel=1e-10), kind
        assert (got.df1, got.df2) == (want["df1"], want["df2"]), kind
        assert got.p == pytest.approx(want["pval"], rel=1e-9, abs=1e-300), kind
        assert (got.n_subjects, got.n_raters, got.kind) == (x.shape[0], x.shape[1], kind)


@pytest.mark.parametrize("n,k", [(2, 3), (5, 3), (12, 4), (30, 2), (8, 10)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_icc_and_its_interval_equal_pingouin(n, k, seed):
    _assert_same_as_pingouin(_ratings(seed, n, k))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 15), k=st.integers(2, 7), seed=st.integers(0, 2 ** 31), scale=st.floats(0.01, 100))
def test_icc_equals_pingouin_on_any_table(n, k, seed, scale):
    assume(n * k >= 5)      # pingouin's ANOVA wants 5 values
    x = _ratings(seed, n, k) * scale
    ref = _pingouin_icc(x)
    for kind, row in PG_ROWS.items():
        got = R.icc(x, kind)
        want = ref.iloc[row]
        for ours, theirs in ((got.value, want["ICC"]), (got.ci_low, want["CI95"][0]), (got.ci_high, want["CI95"][1])):
            assert ours == pytest.approx(theirs, abs=1e-10) or (np.isnan(ours) and np.isnan(theirs)), kind


def test_shrout_fleiss_published_table():
    """Shrout & Fleiss (1979), Table 2 (6 targets x 4 judges) and the ICCs of their Table 4."""
    x = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
    published = {"ICC1": 0.17, "ICC2": 0.29, "ICC3": 0.71, "ICC1k": 0.44, "ICC2k": 0.62, "ICC3k": 0.91}
    for kind, value in published.items():
        assert round(R.icc(x, kind).value, 2) == value, kind


def test_a_missing_cell_is_refused_where_pingouin_would_drop_its_subject():
    x = _ratings(3, 10, 4)
    x[6, 2] = np.nan
    for kind in R.ICC_KINDS:
        with pytest.raises(InvalidInput) as e:
            R.icc(x, kind)
        assert isinstance(e.value, StimkitError) and "\n" not in str(e.value)
    with pytest.raises(InvalidInput):
        R.cronbach_alpha(x)
    # what pingouin does instead (nan_policy="omit"): subject 6 silently gone
    long = pd.DataFrame({"t": np.repeat(np.arange(10), 4), "r": np.tile(np.arange(4), 10), "s": x.ravel()})
    dropped = pg.intraclass_corr(data=long, targets="t", raters="r", ratings="s", nan_policy="omit")
    assert dropped.iloc[2]["ICC"] == pytest.approx(R.icc(np.delete(x, 6, axis=0), "ICC3").value, abs=1e-10)


@pytest.mark.parametrize("shape", [(1, 4), (6, 1), (1, 1)])
def test_fewer_than_two_subjects_or_raters_refused(shape):
    with pytest.raises(InvalidInput):
        R.icc(np.arange(np.prod(shape), dtype=float).reshape(shape), "ICC2")


def test_bad_kind_and_constant_table_refused():
    with pytest.raises(InvalidInput):
        R.icc(_ratings(0, 5, 3), "ICC(2,1)")
    with pytest.raises(InvalidInput):
        R.icc(np.ones((5, 3)), "ICC2")


@pytest.mark.parametrize("n,k,seed", [(5, 2, 0), (20, 6, 1), (50, 12, 2), (9, 3, 3)])
def test_cronbach_alpha_and_its_interval_equal_pingouin(monkeypatch, n, k, seed):
    x = _ratings(seed, n, k)
    value, rounded = pg.cronbach_alpha(pd.DataFrame(x))
    got = R.cronbach_alpha(x)
    assert got.value == pytest.approx(value, abs=1e-10)
    assert (got.n, got.k) == (n, k)
    assert [round(got.ci_low, 3), round(got.ci_high, 3)] == pytest.approx(list(rounded), abs=1e-12)

    class _NoRound:   # pingouin rounds alpha's interval to 3 decimals with np.round: take it unrounded
        round = staticmethod(lambda a, *args, **kw: np.asarray(a, dtype=float))

        def __getattr__(self, name):
            return getattr(np, name)

    monkeypatch.setattr(pg.reliability, "np", _NoRound())
    _, full = pg.cronbach_alpha(pd.DataFrame(x))
    assert got.ci_low == pytest.approx(full[0], abs=1e-10)
    assert got.ci_high == pytest.approx(full[1], abs=1e-10)
    assert got.ci_low < got.value < got.ci_high


def test_alpha_is_icc3k_on_the_same_table():
    """Cronbach's alpha is the consistency ICC of the k items' mean (McGraw & Wong 1996)."""
    x = _ratings(5, 14, 5)
    assert R.cronbach_alpha(x).value == pytest.approx(R.icc(x, "ICC3k").value, abs=1e-12)


def test_spearman_brown_split_half_by_hand():
    """4 items: the three splits into pairs, each halves' Pearson r, their mean stepped up by 2r/(1+r)."""
    x = np.array([[1, 2, 1, 3], [2, 2, 3, 3], [3, 5, 2, 4], [4, 3, 5, 6], [5, 6, 4, 5]], float)
    rs = []
    for one in ((0, 1), (0, 2), (0, 3)):
        two = tuple(sorted(set(range(4)) - set(one)))
        rs.append(np.corrcoef(x[:, one].mean(axis=1), x[:, two].mean(axis=1))[0, 1])
    r = float(np.mean(rs))
    got = R.split_half_items(x)
    assert got.exhaustive and got.n_splits == 3 and (got.n, got.k) == (5, 4)
    assert got.r == pytest.approx(r, abs=1e-12)
    assert got.value == pytest.approx(2 * r / (1 + r), abs=1e-12)
    # the first split worked through: halves' means 1.5 2 4 3.5 5.5 (items 1, 2) and 2 3 3 5.5 4.5
    # (items 3, 4); deviations' products sum to 5.6, squares to 10.3 and 7.7
    assert rs[0] == pytest.approx(5.6 / np.sqrt(10.3 * 7.7), abs=1e-12)
    # its interval is alpha's (Feldt's, df 4 and 12) around it: the documented choice (bench/sim_reliability.py)
    from scipy.stats import f
    assert (got.ci_low, got.ci_high) == pytest.approx((1 - (1 - got.value) * f.isf(0.025, 4, 12),
                                                       1 - (1 - got.value) * f.isf(0.975, 4, 12)), abs=1e-12)
    assert got.ci_low < got.value < got.ci_high
    # the function over profiles (items as rows) is the same computation
    assert R.split_half(x.T, np.random.default_rng(0)) == pytest.approx(got.value, abs=1e-15)


def test_split_half_of_parallel_items_is_one_and_random_splits_are_seeded():
    base = np.random.default_rng(0).normal(size=(30, 1))
    assert R.split_half_items(np.repeat(base, 6, axis=1) + np.arange(6)).value == pytest.approx(1.0)
    x = _ratings(4, 25, 16)     # C(16, 8) / 2 = 6435 splits: 200 random ones
    a, b = R.split_half_items(x, np.random.default_rng(9)), R.split_half_items(x, np.random.default_rng(9))
    assert a == b and not a.exhaustive and a.n_splits == 200
    with pytest.raises(InvalidInput):
        R.split_half_items(x[:, :3])
