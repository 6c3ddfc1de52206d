"""Words and templates as random factors (stats.crossed): against statsmodels' REML and the
ANOVA mean squares by hand, invariants, unbalanced designs, refusals, Monte Carlo stability."""

import numpy as np
import pytest
from scipy import stats as sps

from stimkit.errors import InputError
from stimkit.stats.crossed import crossed_fit
from stimkit.stats.intervals import caliskan_from_cohen, effect_size_ci


def balanced(rng, n=8, T=5, reps=1, delta=0.5, sd=(1.0, 0.5, 0.4, 0.7, 0.3)):
    """s for n + n words x T templates (reps sentences a cell): word, template, group x template,
    word x template and within-cell effects with the SDs in `sd`."""
    g = np.repeat([1, 0], n * T * reps)
    w = np.repeat(np.arange(2 * n), T * reps)
    t = np.tile(np.repeat(np.arange(T), reps), 2 * n)
    u, v, c = rng.normal(0, sd[0], 2 * n), rng.normal(0, sd[1], T), rng.normal(0, sd[2], (2, T))
    e = rng.normal(0, sd[3], (2 * n, T))
    s = delta * g + u[w] + v[t] + c[g, t] + e[w, t] + (rng.normal(0, sd[4], len(g)) if reps > 1 else 0)
    return s, g.astype(bool), w, t


def by_hand(s, n, T):
    """The classical two-group crossed ANOVA (words nested in groups, one sentence a cell)."""
    y = s.reshape(2 * n, T)                   # rows: X's words then Y's
    gm = y.reshape(2, n, T).mean(axis=(1, 2))  # group means
    wm = y.mean(axis=1)                       # word means
    tm = y.mean(axis=0)
    gtm = y.reshape(2, n, T).mean(axis=1)     # group x template means
    grand = y.mean()
    ms_w = T * np.sum((wm - np.repeat(gm, n)) ** 2) / (2 * (n - 1))
    ms_t = 2 * n * np.sum((tm - grand) ** 2) / (T - 1)
    ms_gt = n * np.sum((gtm - gm[:, None] - tm[None, :] + grand) ** 2) / (T - 1)
    res = y - wm[:, None] - np.repeat(gtm, n, axis=0) + np.repeat(gm, n)[:, None]
    ms_wt = np.sum(res ** 2) / (2 * (n - 1) * (T - 1))
    return ms_w, ms_t, ms_gt, ms_wt


def test_balanced_design_equals_the_anova_mean_squares_by_hand():
    rng = np.random.default_rng(3)
    n, T = 8, 5
    s, g, w, t = balanced(rng, n, T, sd=(1.0, 0.8, 0.6, 0.7, 0))
    ms_w, ms_t, ms_gt, ms_wt = by_hand(s, n, T)
    r = crossed_fit(s, g, w, t, method="anova-t")
    # Clark's quasi-F denominator as the contrast's variance, Satterthwaite's df
    var_d = (ms_w + ms_gt - ms_wt) * 2 / (n * T)
    df = var_d ** 2 / (((ms_w * 2 / (n * T)) ** 2 / (2 * (n - 1))) + ((ms_gt * 2 / (n * T)) ** 2 / (T - 1))
                       + ((ms_wt * 2 / (n * T)) ** 2 / (2 * (n - 1) * (T - 1))))
    assert (ms_w - ms_wt > 0) and (ms_gt - ms_wt > 0) and (ms_t - ms_gt > 0)   # no component cut at 0 here
    assert r.se_diff == pytest.approx(np.sqrt(var_d), rel=1e-10)
    assert r.df == pytest.approx(df, rel=1e-10)
    assert r.var_words == pytest.approx((ms_w - ms_wt) / T, rel=1e-10)
    assert r.var_group_template == pytest.approx((ms_gt - ms_wt) / n, rel=1e-10)
    assert r.var_templates == pytest.approx((ms_t - ms_gt) / (2 * n), rel=1e-10)
    assert r.var_residual == pytest.approx(ms_wt, rel=1e-10)
    diff = s[g].mean() - s[~g].mean()
    sigma = np.sqrt(r.var_words + r.var_templates + r.var_group_template + r.var_residual)
    assert r.diff == pytest.approx(diff) and r.sd == pytest.approx(sigma)
    assert r.d == pytest.approx(float(caliskan_from_cohen(diff / sigma, 40, 40)))
    half = sps.t.ppf(0.975, df) * np.sqrt(var_d)
    assert (r.ci_low, r.ci_high) == pytest.approx(tuple(caliskan_from_cohen(np.array([diff - half, diff + half]) / sigma,
                                                                           40, 40)))
    assert r.p == pytest.approx(sps.t.sf(diff / np.sqrt(var_d), df))
    assert (r.n_words_x, r.n_words_y, r.n_templates, r.n_cells, r.n_missing_cells) == (8, 8, 5, 80, 0)
    assert sum(r.shares.values()) == pytest.approx(1)


def test_balanced_design_with_replicates_equals_statsmodels_reml():
    """REML equals the ANOVA estimates on a balanced design when none is negative; the GLS
    estimate of the group effect is then the difference of means, its SE the model's."""
    rng = np.random.default_rng(11)
    s, g, w, t = balanced(rng, 6, 4, reps=2, sd=(1.0, 0.6, 0.5, 0.6, 0.4))
    ours = crossed_fit(s, g, w, t, method="anova-t")
    reml = crossed_fit(s, g, w, t, method="mixedlm-wald")
    for name in ("var_words", "var_templates", "var_group_template", "var_residual", "sd", "d"):
        # statsmodels stops its REML search at a tolerance: agreement to about 1e-4
        assert getattr(ours, name) == pytest.approx(getattr(reml, name), rel=1e-3, abs=3e-4), name
    assert ours.diff == pytest.approx(reml.diff, rel=1e-8)
    assert ours.se_diff == pytest.approx(reml.se_diff, rel=1e-3)


def test_swapping_x_and_y_negates_d_and_mirrors_the_interval():
    rng = np.random.default_rng(5)
    s, g, w, t = balanced(rng)
    keep = rng.random(len(s)) > 0.15        # an unbalanced design too
    for m in (slice(None), keep):
        a = crossed_fit(s[m], g[m], w[m], t[m], rng=np.random.default_rng(1))
        b = crossed_fit(s[m], ~g[m], w[m], t[m], rng=np.random.default_rng(1))
        assert b.d == pytest.approx(-a.d, abs=1e-12)
        assert (b.ci_low, b.ci_high) == pytest.approx((-a.ci_high, -a.ci_low), abs=1e-7)
        assert (b.pi_low, b.pi_high) == pytest.approx((-a.pi_high, -a.pi_low), abs=1e-7)
        assert b.p == pytest.approx(1 - a.p, abs=1e-12)
        two = crossed_fit(s[m], g[m], w[m], t[m], rng=np.random.default_rng(1), alternative="two-sided")
        assert two.p == pytest.approx(2 * min(a.p, 1 - a.p))


def test_a_constant_per_template_leaves_the_contrast_unchanged():
    """Template main effects cancel in X - Y on a balanced design: D, its SE, df and p stay;
    only the templates' variance (in the SD d divides by) grows."""
    rng = np.random.default_rng(8)
    s, g, w, t = balanced(rng)
    shifted = s + np.array([3.0, -1.0, 0.5, 2.0, -4.0])[t]
    a = crossed_fit(s, g, w, t, rng=np.random.default_rng(2))
    b = crossed_fit(shifted, g, w, t, rng=np.random.default_rng(2))
    for name in ("diff", "se_diff", "df", "p", "var_words", "var_group_template", "var_residual"):
        assert getattr(b, name) == pytest.approx(getattr(a, name), rel=1e-9, abs=1e-12), name
    assert b.var_templates > a.var_templates + 1
    # and a constant for all, or a scale, changes nothing of d
    c = crossed_fit(2.5 * s + 7, g, w, t, rng=np.random.default_rng(2))
    assert (c.d, c.ci_low, c.ci_high, c.p) == pytest.approx((a.d, a.ci_low, a.ci_high, a.p), rel=1e-9)


def _dense_estimates(s, g, w, t):
    """The same moment estimator the long way: sentence-level projection matrices by pinv,
    sequential sums of squares and their expectations tr((P_k - P_k-1) Z_c Z_c')."""
    N = len(s)
    one = lambda codes: np.eye(int(codes.max()) + 1)[codes]  # noqa: E731
    wcode = np.unique(np.c_[g, w], axis=0, return_inverse=True)[1].ravel()
    gt = np.unique(np.c_[g, t], axis=0, return_inverse=True)[1].ravel()
    cell = np.unique(np.c_[wcode, t], axis=0, return_inverse=True)[1].ravel()
    Z = [one(wcode), one(t), one(gt), np.eye(N)]
    spaces = [one(g.astype(int)), Z[0], np.hstack(Z[:2]), np.hstack(Z[:3]), one(cell)]
    P = [X @ np.linalg.pinv(X) for X in spaces]
    assert len(np.unique(cell)) == N   # one sentence a cell: the residual is the identity
    A = [P[k + 1] - P[k] for k in range(4)]
    ss = np.array([s @ a @ s for a in A])
    df = np.array([round(np.trace(a)) for a in A])
    K = np.array([[np.trace(a @ z @ z.T) for z in Z] for a in A]) / df[:, None]
    return np.maximum(np.linalg.solve(K, ss / df), 0)


def test_unbalanced_design_equals_the_dense_computation():
    """Words of different kinds with different templates, sentences cut, a missing cell."""
    rng = np.random.default_rng(21)
    s, g, w, t = balanced(rng, 6, 6, sd=(1.0, 0.6, 0.5, 0.7, 0))
    keep = np.ones(len(s), bool)
    keep[(w % 3 == 0) & (t >= 3)] = False     # every third word has only 3 templates (as adjectives)
    keep[rng.choice(np.flatnonzero(keep), 7, replace=False)] = False  # a cut
    s, g, w, t = s[keep], g[keep], w[keep], t[keep]
    r = crossed_fit(s, g, w, t, method="anova-t")
    want = _dense_estimates(s, g.astype(int), w, t)
    got = [r.var_words, r.var_templates, r.var_group_template, r.var_residual]
    assert got == pytest.approx(list(want), rel=1e-8, abs=1e-12)
    assert r.n_missing_cells > 0 and r.n_x != r.n_y and r.ci_low < r.d < r.ci_high
    gpq = crossed_fit(s, g, w, t)
    assert gpq.d == r.d and gpq.ci_low < gpq.d < gpq.ci_high and 0 < gpq.p < 1


def test_word_ids_are_nested_in_their_group():
    """The same word id in X and Y is two words, as stats.group_ids counts them."""
    rng = np.random.default_rng(2)
    s, g, w, t = balanced(rng)
    a = crossed_fit(s, g, w, t)
    b = crossed_fit(s, g, w % 8, t)
    assert (a.d, a.ci_low, a.ci_high, a.var_words) == (b.d, b.ci_low, b.ci_high, b.var_words)


def test_what_cannot_be_estimated_is_refused():
    rng = np.random.default_rng(4)
    s, g, w, t = balanced(rng)
    with pytest.raises(InputError, match="one template"):
        crossed_fit(s, g, w, np.zeros(len(s)))
    one_x_word = (w < 1) | ~g
    with pytest.raises(InputError, match="at least 2 words a side"):
        crossed_fit(s[one_x_word], g[one_x_word], w[one_x_word], t[one_x_word])
    with pytest.raises(InputError, match="share no template"):
        crossed_fit(s, g, w, np.where(g, t, t + 5))
    with pytest.raises(InputError, match="both X and Y"):
        crossed_fit(s, np.ones(len(s), bool), w, t)
    with pytest.raises(InputError, match="both X and Y"):
        crossed_fit([], [], [], [])
    with pytest.raises(InputError, match="one entry per sentence"):
        crossed_fit(s, g[:-1], w, t)
    with pytest.raises(InputError, match="method"):
        crossed_fit(s, g, w, t, method="reml")
    with pytest.raises(InputError, match="NaN"):
        crossed_fit(np.r_[s[:-1], np.nan], g, w, t)
    with pytest.raises(InputError, match="cannot be estimated"):
        crossed_fit(g.astype(float) + 0.0 * s, g, w, t)   # no variation beyond the groups


def attribute_data(rng, n=8, T=4, k=6, sd_alpha=0.0):
    s_target, g, w, t = balanced(rng, n, T)
    N = len(s_target)
    gi = g.astype(int)
    sign = np.r_[np.ones(k), -np.ones(k)]
    cos = (rng.normal(0, 1, 2 * k)[None, :] + rng.normal(0, 1, N)[:, None] + sign * s_target[:, None] / 2
           + rng.normal(0, sd_alpha, (2, 2 * k))[gi] + rng.normal(0, 0.4, (2 * n, 2 * k))[w]
           + rng.normal(0, 0.3, (N, 2 * k)))
    return cos[:, :k], cos[:, k:], g, w, t


def test_random_attributes_add_the_attribute_words_sampling_variance():
    rng = np.random.default_rng(13)
    cos_a, cos_b, g, w, t = attribute_data(rng, sd_alpha=0.6)
    s = cos_a.mean(axis=1) - cos_b.mean(axis=1)
    fixed = crossed_fit(s, g, w, t)
    rand = crossed_fit(s, g, w, t, random_attributes=True, cos_a=cos_a, cos_b=cos_b)
    assert rand.d == fixed.d and rand.sd == fixed.sd                 # the same population d and estimate
    # by hand: per side, the spread of the attribute words' X - Y contrasts less what the
    # word x attribute residual puts in it, times sum w_a^2 = 1/k
    c = np.where(g, 1 / g.sum(), -1 / (~g).sum())
    extra = 0.0
    for cos in (cos_a, cos_b):
        delta = c @ cos
        table = np.array([cos[w == i].mean(axis=0) for i in range(16)])
        res, df = 0.0, 0
        for part in (table[:8], table[8:]):
            r = part - part.mean(1, keepdims=True) - part.mean(0, keepdims=True) + part.mean()
            res, df = res + (r ** 2).sum(), df + 7 * 5
        noise = 16 * (5 / 40) ** 2
        extra += max(np.var(delta, ddof=1) - noise * res / df, 0) / 6
    assert rand.var_attributes == pytest.approx(extra, rel=1e-10) and extra > 0
    assert rand.se_diff == pytest.approx(np.sqrt(fixed.se_diff ** 2 + extra), rel=1e-10)
    assert rand.ci_high - rand.ci_low > fixed.ci_high - fixed.ci_low
    # stimuli of one attribute word count as one unit
    two = crossed_fit(s, g, w, t, random_attributes=True, cos_a=np.repeat(cos_a, 2, axis=1),
                      cos_b=np.repeat(cos_b, 2, axis=1), attribute_a=np.repeat(np.arange(6), 2),
                      attribute_b=np.repeat(np.arange(6), 2))
    assert two.var_attributes == pytest.approx(rand.var_attributes, rel=1e-10)


def test_random_attributes_refuse_what_they_cannot_use():
    rng = np.random.default_rng(14)
    cos_a, cos_b, g, w, t = attribute_data(rng)
    s = cos_a.mean(axis=1) - cos_b.mean(axis=1)
    with pytest.raises(InputError, match="cos_a and cos_b"):
        crossed_fit(s, g, w, t, random_attributes=True)
    with pytest.raises(InputError, match="not mean"):
        crossed_fit(s + 1, g, w, t, random_attributes=True, cos_a=cos_a, cos_b=cos_b)
    with pytest.raises(InputError, match="one attribute word"):
        crossed_fit(s, g, w, t, random_attributes=True, cos_a=cos_a, cos_b=cos_b, attribute_a=["pleasant"] * 6)


def test_both_monte_carlo_intervals_hardly_move_with_the_seed():
    """The pivots' quantiles are quasi-random integrals (stats.pivots): two seeds, ends within
    0.005 (they differ by about 1e-4)."""
    rng = np.random.default_rng(17)
    s, g, w, t = balanced(rng, 8, 5)
    a = crossed_fit(s, g, w, t, rng=np.random.default_rng(1))
    b = crossed_fit(s, g, w, t, rng=np.random.default_rng(2))
    assert (a.ci_low, a.ci_high) != (b.ci_low, b.ci_high)   # the seed is used...
    assert abs(a.ci_low - b.ci_low) < 0.005 and abs(a.ci_high - b.ci_high) < 0.005   # ...and hardly matters
    assert abs(a.p - b.p) < 0.001
    sx, sy = s[g], s[~g]
    groups = np.r_[w[g], w[~g]]
    c = effect_size_ci(sx, sy, groups=groups, rng=np.random.default_rng(1))
    e = effect_size_ci(sx, sy, groups=groups, rng=np.random.default_rng(2))
    assert c.method == "gpq-words" and (c.low, c.high) != (e.low, e.high)
    assert abs(c.low - e.low) < 0.005 and abs(c.high - e.high) < 0.005


def stored_fit(con, result_id: str, seed: int = 0):
    """crossed_fit recomputed from what a result stored: its items' s(w) and words, and each
    template's frame (stimuli.factors.frame of its text), seeded as the run seeds it."""
    from stimkit import store
    from stimkit.seeding import rng_for
    from stimkit.stimuli.factors import frame

    r = store.frame(con, "SELECT test, fingerprint, alternative, ci_level, ddof FROM results WHERE result_id = ?",
                    [result_id]).row(0, named=True)
    items = store.frame(con, """
        SELECT i.role, i.word, i.association, t.template_text FROM result_items i
        JOIN (SELECT DISTINCT template_id, template_text FROM stimuli) t USING (template_id)
        WHERE i.result_id = ? AND i.role IN ('X', 'Y') AND i.association IS NOT NULL ORDER BY i.role, i.ordinal""",
                        [result_id])
    return crossed_fit(items["association"].to_numpy(), (items["role"] == "X").to_numpy(), items["word"].to_list(),
                       [frame(t) for t in items["template_text"]], alternative=r["alternative"], level=r["ci_level"],
                       ddof=r["ddof"], rng=rng_for(seed, r["test"], r["fingerprint"], "crossed"))


def test_a_sentence_result_stores_its_crossed_estimate(catalog_store):
    from stimkit import store

    report = catalog_store.test(["sent-weat6", "weat6"], encoders=["glove-6b-50d"], budget=1000)
    sentence, word = sorted(report.results, key=lambda r: r.test)
    assert sentence.test == "sent-weat6" and word.test == "weat6"
    row = store.frame(catalog_store.con, "SELECT * FROM results WHERE result_id = ?", [sentence.result_id]).row(0, named=True)
    want = stored_fit(catalog_store.con, sentence.result_id)
    assert row["crossed_d"] == pytest.approx(want.d, rel=1e-9)
    assert (row["crossed_ci_low"], row["crossed_ci_high"]) == pytest.approx((want.ci_low, want.ci_high), rel=1e-7)
    assert row["crossed_p"] == pytest.approx(want.p, rel=1e-7) and row["crossed_df"] == pytest.approx(want.df)
    assert row["crossed_method"] == "anova-gpq" and row["n_templates"] == 8   # sent-weat6: names in 8 frames
    shares = [row[f"var_share_{k}"] for k in ("words", "templates", "group_template", "residual")]
    assert shares == pytest.approx(list(want.shares.values())) and sum(shares) == pytest.approx(1)
    assert "8+8 words x 8 templates" in row["crossed_scheme"]
    assert store.one(catalog_store.con, "SELECT crossed_d, crossed_scheme, n_templates FROM results WHERE result_id = ?",
                     [word.result_id]) == (None, None, None)   # a word test has no templates
    # a researcher's view: `results --columns` shows the crossed d with its interval
    from stimkit.views.results import results_view

    view = results_view(store.frame(catalog_store.con, "SELECT * FROM results ORDER BY test"))
    assert view["crossed"].to_list() == [f"{want.d:+.2f} [{want.ci_low:.2f}, {want.ci_high:.2f}]", None]


def test_result_columns_from_prepared_targets():
    """run.crossed.columns: nothing without templates or with one frame; the reason, and no
    numbers, where the design cannot carry the model; the fit on the frames otherwise."""
    from types import SimpleNamespace

    import polars as pl

    from stimkit.run import crossed
    from stimkit.run.options import Options
    from stimkit.seeding import rng_for

    texts = ["This is {{ word }}.", "This is {{ singular|a }}.", "{{ plural|capfirst }} are here.", "Look at {{ word }}."]

    def frame(words, templates):
        pairs = [(w, t) for w in words for t in templates]
        return pl.DataFrame({"word": [w for w, _ in pairs], "template_text": [texts[t] for _, t in pairs],
                             "template_id": [f"set/file:{t}" for _, t in pairs]})

    rng = np.random.default_rng(3)
    opts = Options(seed=4).resolved(SimpleNamespace(name="t", context="sentence", alternative=None, metrics=None, units=None))
    good = SimpleNamespace(kept={"x": frame("abcd", [0, 2, 3]), "y": frame("efgh", [1, 2, 3])})
    s = rng.normal(size=24)
    got = crossed.columns(good, s, opts, "t", "fp")
    # frames 0 and 1 are one ("This is X."): three frames, shared by both sets
    want = crossed_fit(s, np.arange(24) < 12, list("aaabbbcccddd") + list("eeefffggghhh"),
                       ["This is X.", "X are here.", "Look at X."] * 8, rng=rng_for(4, "t", "fp", "crossed"))
    assert got["n_templates"] == 3 and got["crossed_d"] == want.d and got["crossed_ci_low"] == want.ci_low
    assert got["crossed_p"] == want.p and got["crossed"] == want
    assert crossed.columns(SimpleNamespace(kept={"x": frame("abcd", [0]), "y": frame("efgh", [1])}),
                           s[:8], opts, "t", "fp") == {}                       # one frame
    bare = SimpleNamespace(kept={"x": pl.DataFrame({"word": list("abcd")}), "y": pl.DataFrame({"word": list("efgh")})})
    assert crossed.columns(bare, s[:8], opts, "t", "fp") == {}                # no templates (imported sets)
    apart = SimpleNamespace(kept={"x": frame("abcd", [0, 2]), "y": frame("efgh", [3, 3])})
    refused = crossed.columns(apart, np.r_[s[:8], s[:8]], opts, "t", "fp")
    assert refused["crossed_scheme"].startswith("not estimated: ") and "share no template" in refused["crossed_scheme"]
    assert "crossed_d" not in refused and refused["n_templates"] == 3
