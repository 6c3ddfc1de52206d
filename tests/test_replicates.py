"""stats.replicates: d's spread over a family by hand, the share that holds against the beta
quantiles of Clopper-Pearson, and the variance split against Henderson's method I done by
brute force (projection matrices on the full design), an exact identity for what moves d,
and a small simulation (the 500-design one is bench/sim_replicates.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from stimkit.errors import StimkitError
from stimkit.stats import replicates as RP
from stimkit.stats.weat import InvalidInput


def test_spread_by_hand():
    got = RP.spread([0.9, 0.1, 0.5, 0.3])
    # sorted .1 .3 .5 .9; the 2.5% point lies 0.075 of the way from the 1st to the 2nd
    assert (got.median, got.n) == (pytest.approx(0.4), 4)
    assert got.q025 == pytest.approx(0.1 + 0.075 * 0.2)
    assert got.q975 == pytest.approx(0.5 + 0.925 * 0.4)


@pytest.mark.parametrize("bad", [[0.4], [], [0.1, np.nan, 0.3]])
def test_a_family_of_one_or_a_missing_d_refused(bad):
    with pytest.raises(InvalidInput) as e:
        RP.spread(bad)
    assert isinstance(e.value, StimkitError) and "\n" not in str(e.value)


def test_share_holding_with_clopper_pearson():
    got = RP.share_holding(np.array([True] * 9 + [False]))
    assert (got.share, got.n, got.holding) == (0.9, 10, 9)
    assert got.ci_low == pytest.approx(sps.beta.ppf(0.025, 9, 2), abs=1e-12)
    assert got.ci_high == pytest.approx(0.975 ** (1 / 10), abs=1e-12)       # Beta(10, 1)'s 97.5% point
    every = RP.share_holding(np.ones(10, bool))
    assert (every.ci_low, every.ci_high) == (pytest.approx(0.025 ** (1 / 10), abs=1e-12), 1.0)
    with pytest.raises(InvalidInput):
        RP.share_holding(np.array([True]))
    with pytest.raises(InvalidInput):
        RP.share_holding(np.array([0.2, 0.9]))


COMPONENTS = ("words", "templates", "group_template", "word_template", "replicates", "group_replicate",
              "word_replicate", "residual")


def _design(rng, nx, ny, T, R, var, cut=0.0):
    """A sentence test: nx + ny words x T templates (a share `cut` of cells left out, the same in
    every replicate) x R replicates, with the components `var`."""
    W = nx + ny
    g = np.r_[np.ones(nx, int), np.zeros(ny, int)]
    keep = rng.random((W, T)) >= cut
    keep[:, :2] = True
    cw, ct = np.nonzero(keep)
    w, t, r = np.repeat(cw, R), np.repeat(ct, R), np.tile(np.arange(R), len(cw))
    sd = {k: np.sqrt(v) for k, v in var.items()}
    s = (0.3 * g[w] + rng.normal(0, sd["words"], W)[w] + rng.normal(0, sd["templates"], T)[t]
         + rng.normal(0, sd["group_template"], (2, T))[g[w], t] + rng.normal(0, sd["word_template"], (W, T))[w, t]
         + rng.normal(0, sd["replicates"], R)[r] + rng.normal(0, sd["group_replicate"], (2, R))[g[w], r]
         + rng.normal(0, sd["word_replicate"], (W, R))[w, r] + rng.normal(0, sd["residual"], len(w)))
    return s, r, g[w] == 1, w, t


def _indicator(codes):
    _, inv = np.unique(codes, axis=0, return_inverse=True)
    m = np.zeros((len(inv), inv.max() + 1))
    m[np.arange(len(inv)), inv.ravel()] = 1
    return m


def _projection(X):
    u, sv, _ = np.linalg.svd(X, full_matrices=False)
    u = u[:, sv > 1e-9 * sv[0]]
    return u @ u.T, u.shape[1]


def test_variance_split_is_hendersons_method_one_by_brute_force():
    """Sequential sums of squares by projection on the full design (fixed: the group means;
    then words, templates, group x template, cells, replicates, group x replicate, word x
    replicate), E[SS_k] = sum_c var_c tr((P_k - P_k-1) Z_c Z_c'), solved: the same components,
    on an unbalanced design (unequal groups, cells cut)."""
    rng = np.random.default_rng(2)
    var = dict(zip(COMPONENTS, (1.0, 0.6, 0.5, 0.5, 0.4, 0.3, 0.3, 0.4)))
    s, r, x, w, t = _design(rng, 5, 4, 4, 4, var, cut=0.25)
    g = x.astype(int)
    Z = {"words": _indicator(w), "templates": _indicator(t), "group_template": _indicator(np.c_[g, t]),
         "word_template": _indicator(np.c_[w, t]), "replicates": _indicator(r),
         "group_replicate": _indicator(np.c_[g, r]), "word_replicate": _indicator(np.c_[w, r]),
         "residual": np.eye(len(s))}
    X = np.c_[np.ones(len(s)), g]
    P_prev, k_prev = _projection(X)
    ss, df, E = [], [], []
    for name in COMPONENTS:
        if name == "residual":
            P, k = np.eye(len(s)), len(s)
        else:
            X = np.c_[X, Z[name]]
            P, k = _projection(X)
        D = P - P_prev
        ss.append(float(s @ D @ s))
        df.append(k - k_prev)
        E.append([float(np.sum(D * (Z[c] @ Z[c].T))) for c in COMPONENTS])
        P_prev, k_prev = P, k
    K = np.array(E) / np.array(df, float)[:, None]
    want = np.linalg.solve(K, np.array(ss) / np.array(df))
    assert (want > 0).all(), "a seed where no component is estimated below 0 (clipping would hide a difference)"
    got = RP.variance_split(s, r, x, w, t)
    assert [got.detail[c] for c in COMPONENTS] == pytest.approx(list(want), rel=1e-9)
    assert got.components["residual"] == pytest.approx(want[3] + want[6] + want[7], rel=1e-9)
    assert sum(got.shares.values()) == pytest.approx(1.0)
    assert (got.n_replicates, got.n_words_x, got.n_words_y, got.n_templates) == (4, 5, 4, 4)


def test_group_x_replicate_is_what_moves_d():
    """A balanced word test: the variance of D_r = mean_X s - mean_Y s over the replicates is
    exactly 2 var_group_replicate + 2 var_residual / n (the replicate main effect cancels)."""
    rng = np.random.default_rng(3)
    n, R = 10, 12
    g, wd, rep = np.meshgrid(np.arange(2), np.arange(n), np.arange(R), indexing="ij")
    s = (rng.normal(0, 1, (2, n))[g, wd] + rng.normal(0, 3, R)[rep] + rng.normal(0, 0.4, (2, R))[g, rep]
         + rng.normal(0, 0.5, g.shape)).ravel()
    x, w, r = (g == 1).ravel(), (g * n + wd).ravel(), rep.ravel()
    got = RP.variance_split(s, r, x, w)
    D = [s[(r == k) & x].mean() - s[(r == k) & ~x].mean() for k in range(R)]
    assert got.detail["group_replicate"] > 0
    assert np.var(D, ddof=1) == pytest.approx(2 * got.detail["group_replicate"] + 2 * got.detail["residual"] / n, rel=1e-10)
    assert got.n_templates == 0 and set(got.detail) == {"words", "replicates", "group_replicate", "residual"}
    assert got.components["templates"] == 0.0


def test_components_unbiased_and_interval_covers_in_a_small_simulation():
    """60 designs (8+8 words x 4 templates x 8 replicates): every component's mean estimate
    within 4 Monte Carlo SEs of its truth; the group x replicate interval covers in most."""
    rng = np.random.default_rng(2024)
    var = dict(zip(COMPONENTS, (0.8, 0.5, 0.3, 0.5, 0.3, 0.2, 0.3, 0.4)))
    est, hits = [], 0
    for _ in range(60):
        fit = RP.variance_split(*_design(rng, 8, 8, 4, 8, var))
        est.append([fit.detail[c] for c in COMPONENTS])
        lo, hi = fit.group_replicate_ci
        hits += lo <= var["group_replicate"] <= hi
    est = np.array(est)
    se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    for c, mean, e in zip(COMPONENTS, est.mean(axis=0), se):
        assert abs(mean - var[c]) < 4 * e, (c, mean, var[c], e)
    assert hits >= 52          # 95% nominal: below 52 of 60 has probability < 0.5% at 95%


def test_wide_table_is_the_long_one():
    """(replicates x sentences) with per-sentence group, word and template: the same split."""
    rng = np.random.default_rng(6)
    s, r, x, w, t = _design(rng, 5, 5, 3, 4, dict(zip(COMPONENTS, (0.5,) * 8)))
    order = np.lexsort((t, w, r))          # replicate-major, the same sentence order in each
    s, r, x, w, t = s[order], r[order], x[order], w[order], t[order]
    S = int((r == 0).sum())
    wide = RP.variance_split(s.reshape(4, S), None, x[:S], w[:S], t[:S])
    assert wide == RP.variance_split(s, r, x, w, t)


def test_bad_families_refused_in_one_line():
    rng = np.random.default_rng(0)
    var = dict(zip(COMPONENTS, (1.0,) * 8))
    s, r, x, w, t = _design(rng, 4, 4, 3, 3, var)
    drop = np.flatnonzero(r == 1)[0]
    for args in ((np.delete(s, drop), np.delete(r, drop), np.delete(x, drop), np.delete(w, drop), np.delete(t, drop)),
                 (s[r == 0], r[r == 0], x[r == 0], w[r == 0], t[r == 0]),
                 (np.where(np.arange(len(s)) == 5, np.nan, s), r, x, w, t)):
        with pytest.raises(InvalidInput) as e:
            RP.variance_split(*args)
        assert "\n" not in str(e.value)
    with pytest.raises(InvalidInput):
        RP.variance_split(s, r, x, w, t, method="reml")


def test_interval_methods_agree_on_a_balanced_design():
    rng = np.random.default_rng(5)
    var = dict(zip(COMPONENTS, (0.8, 0.5, 0.3, 0.5, 0.3, 0.2, 0.3, 0.4)))
    data = _design(rng, 8, 8, 4, 10, var)
    fits = {m: RP.variance_split(*data, method=m) for m in RP.INTERVALS}
    assert fits["mls"].detail == fits["gpq"].detail == fits["satterthwaite"].detail
    for m, f in fits.items():
        lo, hi = f.group_replicate_ci
        assert 0 <= lo < f.detail["group_replicate"] < hi, m
    # MLS and the generalized pivot: the same interval to the pivot's Monte Carlo error
    assert fits["mls"].group_replicate_ci == pytest.approx(fits["gpq"].group_replicate_ci, rel=0.03)
