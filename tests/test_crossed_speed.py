"""The crossed model's sums of squares from group sums (stats.crossed._anova) against the
projections they stand for, formed the brute-force way: an orthonormal basis (SVD) of each
nested space's full weighted design, as stimkit computed them before (to 1e-9), on balanced,
unbalanced, replicated and sparse designs; and a HolisticBias-sized fit that stays linear."""

import numpy as np
import pytest

from stimkit.stats import crossed as C


def _incidence(codes, k=None):
    k = int(codes.max()) + 1 if k is None else k
    m = np.zeros((len(codes), k))
    m[np.arange(len(codes)), codes] = 1.0
    return m


def _basis(a):
    u, sv, _ = np.linalg.svd(a, full_matrices=False)
    return u[:, : int(np.sum(sv > 1e-9 * sv[0]))]


def brute_force(d):
    """(ss, df, K, c) by projections on SVD bases of the weighted cell-level design."""
    sq = np.sqrt(d.n)
    b = d.sums / sq
    gt, _ = C._codes(list(zip(d.g.tolist(), d.t.tolist())))
    inc = {"words": _incidence(d.w, d.n_words), "templates": _incidence(d.t, d.n_templates), "group_template": _incidence(gt)}
    replicated = float(d.n.sum()) > len(d.n)
    weighted = {k: sq[:, None] * m for k, m in inc.items()}

    def coef(Q):
        out = [float(np.sum((Q.T @ weighted[k]) ** 2)) for k in ("words", "templates", "group_template")]
        cell = float(np.sum(d.n * np.sum(Q ** 2, axis=1)))
        return out + ([cell, float(Q.shape[1])] if replicated else [cell])

    spaces = [_incidence(d.g, 2), inc["words"], np.hstack([inc["words"], inc["templates"]]),
              np.hstack([inc["words"], inc["templates"], inc["group_template"]])]
    bases = [_basis(sq[:, None] * m) for m in spaces]
    reduction = [float(np.sum((Q.T @ b) ** 2)) for Q in bases] + [float(np.sum(b ** 2))]
    ranks = [Q.shape[1] for Q in bases] + [len(d.n)]
    total = float(d.n.sum())
    coefs = [coef(Q) for Q in bases] + [[total] * 4 + ([float(len(d.n))] if replicated else [])]
    ss, df, K = np.diff(reduction), np.diff(ranks).astype(float), np.diff(np.array(coefs), axis=0)
    if replicated:
        ss = np.append(ss, d.squares - reduction[-1])
        df = np.append(df, total - len(d.n))
        K = np.vstack([K, [0, 0, 0, 0, total - len(d.n)]])
    a = d.n * np.where(d.g == 1, 1.0 / d.n_x, -1.0 / d.n_y)
    c = [float(np.sum((inc[k].T @ a) ** 2)) for k in ("words", "templates", "group_template")]
    c += [float(np.sum(a ** 2)), 1.0 / d.n_x + 1.0 / d.n_y] if replicated else [float(np.sum(a ** 2))]
    return ss, df, K / df[:, None], np.array(c)


def design(rng, n=(6, 7), T=5, reps=1, keep=1.0, extra_templates=0):
    """Sentences of n[0] X words and n[1] Y words in T shared templates (plus some a group's own),
    reps sentences a cell, each cell kept with probability `keep`."""
    rows = []
    for g, count in ((1, n[0]), (0, n[1])):
        own = [f"own{g}-{i}" for i in range(extra_templates)]
        for i in range(count):
            for t in [f"t{j}" for j in range(T)] + own:
                if rng.random() < keep:
                    rows += [(g, f"w{g}-{i}", t)] * int(rng.integers(1, reps + 1))
    g, w, t = (np.array(v) for v in zip(*rows))
    s = rng.normal(0, 1, len(g)) + 0.4 * g + rng.normal(0, 0.5, 100)[np.unique(w, return_inverse=True)[1] % 100]
    return s, g.astype(bool), w, t


@pytest.mark.parametrize("seed, kw", [
    (1, {}),                                               # balanced, one sentence a cell
    (2, {"reps": 1, "n": (8, 8), "T": 7}),
    (3, {"reps": 3}),                                      # replicated, unequal counts
    (4, {"keep": 0.7}),                                    # cells missing at random
    (5, {"keep": 0.8, "reps": 2, "extra_templates": 2}),   # templates only one group uses
    (6, {"n": (3, 12), "T": 3, "keep": 0.9, "reps": 4}),
    # more templates than words: the system is solved on the words, templates absorbed
    (7, {"n": (3, 4), "T": 12}),
    (8, {"n": (4, 3), "T": 10, "keep": 0.6, "reps": 3, "extra_templates": 3}),
    (9, {"n": (2, 2), "T": 9, "keep": 0.8}),
])
def test_sums_of_squares_equal_the_projections_on_svd_bases(seed, kw):
    rng = np.random.default_rng(seed)
    s, g, w, t = design(rng, **kw)
    d = C._design(s, g, list(w), list(t), "t")
    got = C._anova(d, "t")
    ss, df, K, c = brute_force(d)
    assert np.array_equal(got.df, df)
    np.testing.assert_allclose(got.ss, ss, rtol=1e-9, atol=1e-9 * ss.sum())
    np.testing.assert_allclose(got.K, K, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.c, c, rtol=1e-12)
    # and so the fit itself: components, p, interval
    np.testing.assert_allclose(np.linalg.solve(got.K, got.ss / got.df), np.linalg.solve(K, ss / df), rtol=1e-7, atol=1e-10)


def test_a_holisticbias_sized_design_fits_in_seconds_and_grows_linearly():
    """~20,000 sentences, 900 templates (each word in a few dozen): the fit costs time linear in
    the sentences (bench/bench_speed.py prints the figures); here only that it finishes and
    finds the simulated total variance."""
    import time

    rng = np.random.default_rng(7)
    N, T, W = 20_000, 900, 600
    w = rng.integers(0, W, N)
    g = w < W // 2
    t = rng.integers(0, T, N)
    s = 0.3 * g + rng.normal(0, 0.3, W)[w] + rng.normal(0, 0.2, T)[t] + rng.normal(0, 1, N)
    started = time.perf_counter()
    r = C.crossed_fit(s, g, w, t)
    assert time.perf_counter() - started < 30    # the old SVD bases needed tens of GB here
    assert r.n_templates == T and r.n_x + r.n_y == N and 0 < r.p < 1
    assert r.sd ** 2 == pytest.approx(1 + 0.3 ** 2 + 0.2 ** 2, rel=0.1)
