"""A test over a family of replicates (embeddings retrained under seeds or on bootstrap
samples of a corpus): pure functions over arrays.

- `spread`: the median of d over the replicates and its 2.5 and 97.5% quantiles (numpy's
  default, linear interpolation between order statistics: Hyndman & Fan's type 7).
- `share_holding`: the share of replicates in which the decision holds, with a Clopper-Pearson
  (exact) interval: families are small (10-30) and the share is often 1, where Wilson's
  interval covers less than its level for some true shares; the exact one never does.
- `variance_split`: the crossed model of stats.crossed extended by a replicate factor.

The model. Each replicate r is a fresh embedding; the association s of a target sentence i
(word w of group g in template t) in replicate r is

    s = mu_g + u_w + v_t + c_gt + b_i + a_r + h_gr + m_wr + e_ri

with independent normal effects: u, v, c as in stats.crossed (words nested in groups,
templates, group x template); b_i what the sentence shares across replicates beyond them
(word x template, and a sentence's own effect when a cell has several: stats.crossed's
residual); a_r the replicate (it shifts every sentence alike); h_gr group x replicate (it
moves X against Y: the replicate variance that moves d, D_r = D + h_Xr - h_Yr + ...);
m_wr word x replicate (a word's own drift between retrainings); e_ri the rest (template x
replicate and the like). In a word test there are no templates and no b or m apart from e:
s = mu_g + u_w + a_r + h_gr + e_wr. The replicates see the same sentences (an embedding's
vocabulary restricted to the words every replicate knows), so the design is the base
design of stats.crossed crossed with the replicates.

Estimation. The sentences x replicates table splits into two orthogonal parts. The sentence
means over the replicates follow stats.crossed's model exactly (a_r and h_gr average into
the fixed group means; m's mean joins the word effect and e's the residual, each divided by
R), so its sequential sums of squares and their expectations are stats.crossed's (_anova),
scaled by R. The deviations from the sentence means carry a, h, m and e only; their
sequential sums of squares (replicates, group x replicate, word x replicate, residual: the
replicates' means, each group's, each word's, the rest) have closed-form expectations
(below, `_within`). The components solve the triangular system E[MS] = K var, negative
estimates set to 0 (Henderson's method I, as stats.crossed).

Intervals for a component sum_k lambda_k MS_k (one mean square less others):
- mls (the modified large-sample interval, Ting, Burdick, Graybill, Jeyaratnam & Lu 1990;
  Burdick & Graybill 1992, 3.7-3.8) of one positive term less several;
- gpq (generalized pivots, Weerahandi 1993): the quantiles of sum lambda_k df_k MS_k /
  chi2(df_k) over quasi-random chi-square draws (stats.pivots);
- satterthwaite: the estimate as a scaled chi-square with Satterthwaite's df.
Each end is set to 0 where it falls below. bench/sim_replicates.py measures their coverage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import crossed, pivots
from .recover import clopper_pearson
from .weat import InvalidInput

INTERVALS = ("mls", "gpq", "satterthwaite")
DEFAULT_INTERVAL = "mls"
REPORTED = ("words", "templates", "group_template", "replicates", "group_replicate", "residual")


@dataclass(frozen=True)
class Spread:
    """d over the replicates of a family."""
    median: float
    q025: float              # the 2.5% quantile (numpy's linear interpolation)
    q975: float
    n: int                   # replicates


@dataclass(frozen=True)
class Share:
    """The share of replicates in which the decision holds, with its exact interval."""
    share: float
    n: int                   # replicates
    holding: int             # replicates in which it holds
    ci_low: float
    ci_high: float
    level: float = 0.95
    method: str = "clopper-pearson"


@dataclass(frozen=True)
class VarianceSplit:
    """Variance components of s over words, templates and replicates (module docstring)."""
    components: dict         # REPORTED order: words, templates, group_template, replicates, group_replicate, residual
    shares: dict             # each reported component's share of their total
    detail: dict             # every estimated component: the residual's parts word_template (sentence), word_replicate, residual
    intervals: dict          # name -> (low, high) for "replicates" and "group_replicate"
    level: float
    method: str              # mls | gpq | satterthwaite
    n_replicates: int
    n_sentences: int         # per replicate
    n_words_x: int
    n_words_y: int
    n_templates: int         # 0 for a word test
    scheme: str

    @property
    def group_replicate_ci(self) -> tuple[float, float]:
        """The interval of the component that moves d between replicates."""
        return self.intervals["group_replicate"]


def _finite(values, what: str, name: str = "d") -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if len(x) < 2:
        raise InvalidInput(f"{what}: a family of {len(x)} replicate(s): a spread needs at least 2")
    if not np.isfinite(x).all():
        raise InvalidInput(f"{what}: {name} is missing or infinite for replicate {int(np.flatnonzero(~np.isfinite(x))[0])}")
    return x


def spread(ds, what: str = "replicates") -> Spread:
    """The median of `ds` (d per replicate) and its 2.5-97.5% quantiles. At least 2 replicates."""
    x = _finite(ds, what)
    lo, mid, hi = np.quantile(x, [0.025, 0.5, 0.975])
    return Spread(median=float(mid), q025=float(lo), q975=float(hi), n=len(x))


def share_holding(decisions, level: float = 0.95, what: str = "replicates") -> Share:
    """The share of replicates whose decision holds (`decisions`: one bool a replicate), with
    a Clopper-Pearson interval. At least 2 replicates."""
    x = np.asarray(decisions).ravel()
    if len(x) < 2:
        raise InvalidInput(f"{what}: a family of {len(x)} replicate(s): a share needs at least 2")
    if x.dtype != bool:
        raise InvalidInput(f"{what}: decisions must be true or false per replicate, got {x.dtype}")
    k = int(x.sum())
    lo, hi = clopper_pearson(k, len(x), level)
    return Share(share=k / len(x), n=len(x), holding=k, ci_low=lo, ci_high=hi, level=level)


@dataclass(frozen=True)
class _Split:
    names: tuple[str, ...]
    ms: np.ndarray
    df: np.ndarray
    K: np.ndarray            # E[MS] = K @ var


def _table(s, replicate, is_x, word, template, what):
    """(R x S table of s, per sentence: is_x, word, template): the replicates must hold the
    same sentences, matched by (group, word, template, k-th occurrence)."""
    s = np.asarray(s, dtype=np.float64)
    is_x = np.asarray(is_x, dtype=bool)
    n = len(s)
    template = [None] * n if template is None else list(template)
    if not (len(replicate) == len(is_x) == len(word) == len(template) == n):
        raise InvalidInput(f"{what}: s, replicate, is_x, word and template need one entry per sentence "
                           f"(got {n}, {len(replicate)}, {len(is_x)}, {len(word)}, {len(template)})")
    if not np.isfinite(s).all():
        raise InvalidInput(f"{what}: s holds NaN or infinite values")
    rcode, rindex = crossed._codes(list(replicate))
    R = len(rindex)
    if R < 2:
        raise InvalidInput(f"{what}: a family of {R} replicate(s): the replicate variance needs at least 2")
    seen: dict = {}
    keys = []
    for r, g, w, t in zip(rcode.tolist(), is_x.tolist(), word, template):
        k = (r, g, w, t)
        seen[k] = seen.get(k, 0) + 1
        keys.append((g, w, t, seen[k]))
    kcode, kindex = crossed._codes(keys)
    S = len(kindex)
    counts = np.bincount(rcode, minlength=R)
    if (counts != S).any():
        r = int(np.flatnonzero(counts != S)[0])
        raise InvalidInput(f"{what}: replicate {list(rindex)[r]!r} has {counts[r]} sentences where the family has "
                           f"{S} distinct ones: every replicate must score the same sentences (the shared words)")
    Y = np.full((R, S), np.nan)
    Y[rcode, kcode] = s
    sentences = list(kindex)
    return (Y, np.array([k[0] for k in sentences]), [k[1] for k in sentences],
            [k[2] for k in sentences], list(rindex))


def _within(Z: np.ndarray, is_x: np.ndarray, wcode: np.ndarray, split_words: bool):
    """Sequential sums of squares of the deviations Z (R x S) from the sentence means:
    replicates, group x replicate, [word x replicate,] residual, with their df and
    expectations in (a, h, [m,] e). With n_w sentences of word w, N_g of group g, N in all:
      E[SS_R]/(R-1)  = N a + (N_x^2 + N_y^2)/N h + sum n_w^2/N m + e
      E[SS_GR]/(R-1) = 2 N_x N_y / N h + (sum_g sum_{w in g} n_w^2 / N_g - sum n_w^2 / N) m + e
      E[SS_WR]/(R-1) = (N - sum_g sum_{w in g} n_w^2 / N_g) m + (W - 2) e
      E[SS_E]/(R-1)  = (N - W) e."""
    R, N = Z.shape
    groups = is_x.astype(np.int64)
    Ng = np.bincount(groups, minlength=2).astype(np.float64)
    nw = np.bincount(wcode).astype(np.float64)
    W = len(nw)
    group_of_word = np.zeros(W, dtype=np.int64)
    group_of_word[wcode] = groups
    zr = Z.mean(axis=1)
    zg = np.stack([Z[:, groups == g].mean(axis=1) for g in (0, 1)], axis=1)          # R x 2
    zw = (Z @ crossed._incidence(wcode, W)) / nw                                     # R x W
    t_r = N * float(np.sum(zr ** 2))
    t_g = float(np.sum(Ng * np.sum(zg ** 2, axis=0)))
    t_w = float(np.sum(nw * np.sum(zw ** 2, axis=0)))
    total = float(np.sum(Z ** 2))
    sum_n2 = float(np.sum(nw ** 2))
    within_g = float(sum(np.sum(nw[group_of_word == g] ** 2) / Ng[g] for g in (0, 1)))
    r1 = R - 1.0
    if split_words:
        names = ("replicates", "group_replicate", "word_replicate", "residual")
        ss = np.array([t_r, t_g - t_r, t_w - t_g, total - t_w])
        df = np.array([r1, r1, r1 * (W - 2), r1 * (N - W)])
        E = np.array([[N, (Ng[0] ** 2 + Ng[1] ** 2) / N, sum_n2 / N, 1.0],
                      [0.0, 2 * Ng[0] * Ng[1] / N, within_g - sum_n2 / N, 1.0],
                      [0.0, 0.0, N - within_g, W - 2.0],
                      [0.0, 0.0, 0.0, N - W]]) * r1
    else:   # one sentence a word (a word test): word x replicate is the residual
        names = ("replicates", "group_replicate", "residual")
        ss = np.array([t_r, t_g - t_r, total - t_g])
        df = np.array([r1, r1, r1 * (N - 2)])
        E = np.array([[N, (Ng[0] ** 2 + Ng[1] ** 2) / N, 1.0],
                      [0.0, 2 * Ng[0] * Ng[1] / N, 1.0],
                      [0.0, 0.0, N - 2.0]]) * r1
    return names, ss, df, E / df[:, None]


def _split(Y, is_x, word, template, what) -> tuple[_Split, dict]:
    R, S = Y.shape
    means = Y.mean(axis=0)
    Z = Y - means
    word_test = all(t is None for t in template)
    wcode, _ = crossed._codes(list(zip(is_x.tolist(), word)))
    if word_test:
        nx, ny = len(np.unique(wcode[is_x])), len(np.unique(wcode[~is_x]))
        if nx < 2 or ny < 2:
            raise InvalidInput(f"{what}: words as a random factor need at least 2 words a side (got {nx} and {ny})")
        if len(np.unique(wcode)) != S:
            raise InvalidInput(f"{what}: a word test has one score per word and replicate; a word repeats")
        # the words' means: a one-way table of words nested in the groups
        dev = means - np.where(is_x, means[is_x].mean(), means[~is_x].mean())
        b_names, b_ss, b_df = ("words",), np.array([R * float(np.sum(dev ** 2))]), np.array([S - 2.0])
        b_K = np.array([[1.0]])          # the means' model: E[MS] = var_words(means)
        sizes = dict(n_words_x=nx, n_words_y=ny, n_templates=0)
    else:
        if any(t is None for t in template):
            raise InvalidInput(f"{what}: some sentences have a template and some not")
        d = crossed._design(means, is_x, word, template, what)
        an = crossed._anova(d, what)
        # stats.crossed's residual is shared by the replicates: here it is word x template
        # (and a cell's own sentences, "sentence", where a cell has several)
        rename = {"residual": "word_template", "within": "sentence"}
        b_names, b_ss, b_df, b_K = tuple(rename.get(k, k) for k in an.names), an.ss * R, an.df, an.K
        sizes = dict(n_words_x=d.n_words_x, n_words_y=d.n_words - d.n_words_x, n_templates=d.n_templates)
    split_words = not word_test and len(np.unique(wcode)) < S
    w_names, w_ss, w_df, w_K = _within(Z, is_x, wcode, split_words)
    # the full system: the means' components scaled by R; a word x replicate effect joins the
    # means' word effect divided by R, the residual their last component divided by R
    nb, nw_ = len(b_names), len(w_names)
    K = np.zeros((nb + nw_, nb + nw_))
    K[:nb, :nb] = R * b_K
    if word_test or not split_words:
        K[:nb, -1] += b_K[:, 0] if word_test else b_K[:, -1]
    else:
        K[:nb, -1] += b_K[:, -1]
        K[:nb, nb + 2] += b_K[:, 0]
    K[nb:, nb:] = w_K
    names = b_names + w_names
    return _Split(names, np.r_[b_ss / b_df, w_ss / w_df], np.r_[b_df, w_df], K), sizes


def _interval(sp: _Split, j: int, level: float, method: str, rng) -> tuple[float, float]:
    """The `level` interval of component j, a combination lam @ MS (module docstring)."""
    from scipy import stats as sps

    lam = np.linalg.inv(sp.K)[j]
    lam[np.abs(lam) < 1e-12 * np.max(np.abs(lam))] = 0.0
    terms = lam * sp.ms
    est = float(terms.sum())
    a = (1 - level) / 2
    if method == "satterthwaite":
        den = float(np.sum(terms ** 2 / sp.df))
        if est <= 0 or den <= 0:
            return 0.0, 0.0
        df = est ** 2 / den
        with np.errstate(divide="ignore"):     # a df near 0: the upper end is infinite
            lo, hi = df * est / sps.chi2.isf(a, df), df * est / sps.chi2.ppf(a, df)
    elif method == "gpq":
        used = np.flatnonzero(lam)
        chi = pivots.chi2_draws(sp.df[used], pivots.DEFAULT_DRAWS * 4, rng)
        draws = (lam[used] * sp.df[used] * sp.ms[used]) @ (1 / chi)
        lo, hi = np.quantile(draws, [a, 1 - a])
    else:   # mls: positive mean squares less negative ones (Burdick & Graybill 1992, 3.13-3.14)
        pos, neg = np.flatnonzero(lam > 0), np.flatnonzero(lam < 0)
        G = 1 - sp.df / sps.chi2.isf(a, sp.df)          # 1 - 1 / F_{a: df, inf}
        H = sp.df / sps.chi2.ppf(a, sp.df) - 1          # 1 / F_{1-a: df, inf} - 1
        c = np.abs(terms)
        vl = float(np.sum((G[pos] * c[pos]) ** 2) + np.sum((H[neg] * c[neg]) ** 2))
        vu = float(np.sum((H[pos] * c[pos]) ** 2) + np.sum((G[neg] * c[neg]) ** 2))
        for q in pos:
            for r in neg:
                Fa, F1a = sps.f.isf(a, sp.df[q], sp.df[r]), sps.f.ppf(a, sp.df[q], sp.df[r])
                vl += ((Fa - 1) ** 2 - G[q] ** 2 * Fa ** 2 - H[r] ** 2) / Fa * c[q] * c[r]
                vu += ((1 - F1a) ** 2 - H[q] ** 2 * F1a ** 2 - G[r] ** 2) / F1a * c[q] * c[r]
        # terms of one sign beyond the first (unbalanced designs only): their cross terms
        # (G*, H*) are left out, which widens the interval a little
        lo, hi = est - np.sqrt(max(vl, 0.0)), est + np.sqrt(max(vu, 0.0))
    return max(float(lo), 0.0), max(float(hi), 0.0)


def variance_split(s, replicate, is_x, word, template=None, *, level: float = 0.95,
                   method: str = DEFAULT_INTERVAL, rng: np.random.Generator | None = None,
                   what: str = "replicate variance split") -> VarianceSplit:
    """The variance components of s over words, templates (sentence tests) and replicates,
    with intervals for the replicates' two components (module docstring).

    Long form: s, a target sentence's (or word's) association s(w, A, B) in one replicate, with
    per row the replicate's id, is_x (True for X's), word and template (None, or all None: a
    word test). Wide form: s a (replicates x sentences) array, replicate None (or the
    replicates' ids, one a row), is_x, word and template one a column. Every replicate must
    hold the same sentences. rng seeds the gpq draws (None: 0)."""
    if np.ndim(s) == 2:
        R, S = np.shape(s)
        replicate = np.repeat(np.arange(R) if replicate is None else np.asarray(replicate), S)
        is_x, word = np.tile(np.asarray(is_x), R), np.tile(np.asarray(word, dtype=object), R)
        template = None if template is None else np.tile(np.asarray(template, dtype=object), R)
        s = np.ravel(s)
    if method not in INTERVALS:
        raise InvalidInput(f"{what}: method must be one of {', '.join(INTERVALS)}, not {method!r}")
    if not 0 < level < 1:
        raise InvalidInput(f"{what}: level must lie strictly between 0 and 1, not {level}")
    Y, is_x_s, word_s, template_s, reps = _table(s, replicate, is_x, list(word), template, what)
    sp, sizes = _split(Y, is_x_s, word_s, template_s, what)
    var = np.maximum(np.linalg.solve(sp.K, sp.ms), 0.0)
    detail = dict(zip(sp.names, (float(v) for v in var)))
    residual = sum(detail.get(k, 0.0) for k in ("word_template", "sentence", "word_replicate", "residual"))
    components = {k: (residual if k == "residual" else detail.get(k, 0.0)) for k in REPORTED}
    total = sum(components.values())
    shares = {k: (v / total if total > 0 else float("nan")) for k, v in components.items()}
    rng = rng if rng is not None else np.random.default_rng(0)
    intervals = {k: _interval(sp, sp.names.index(k), level, method, rng) for k in ("replicates", "group_replicate")}
    R, S = Y.shape
    design = (f"{sizes['n_words_x']}+{sizes['n_words_y']} words"
              + (f" x {sizes['n_templates']} templates" if sizes["n_templates"] else "") + f" x {R} replicates")
    return VarianceSplit(components=components, shares=shares, detail=detail, intervals=intervals, level=level,
                         method=method, n_replicates=R, n_sentences=S, **sizes,
                         scheme=f"sequential sums of squares over the crossed model with a replicate factor ({design}); "
                                f"{method} intervals for the replicates' components")
