"""Words and templates as random factors: a crossed random-effects estimate of Caliskan's d
for sentence tests, with an interval that generalises to new words and new templates.

The model (what is random). Each target sentence is a target word w (of group X or Y) in a
template t; its association s(w, A, B) is, the attributes fixed as in the permutation test,

    s = mu_g + u_w + v_t + c_gt + e_wt (+ r, a second sentence in the same cell)

with independent normal effects: words u ~ (0, var_words), nested in their group; templates
v ~ (0, var_templates), shared by both groups; group x template c ~ (0, var_group_template),
which is what makes d move between templates; and the residual e (word x template and
sentence noise, var_residual; with several sentences in one word x template cell the two
are estimated apart and reported together). Words and templates are samples from their
populations (Clark 1973; Judd, Westfall & Kenny 2012).

The population d. delta = (mu_X - mu_Y) / sigma with sigma^2 = var_words + var_templates +
var_group_template + var_residual: the SD of a sentence's s within a group over the
population of words and templates, the SD that Caliskan's d divides by. As in
stats.intervals, the population d is Caliskan's formula applied to that population at the
design's sentence counts: caliskan_from_cohen(delta, N_x, N_y, ddof). The estimate is
D / sigma_hat mapped the same way, with D = mean_X s - mean_Y s over the sentences (Caliskan's
numerator, unbiased for mu_X - mu_Y under the model whatever the design) and sigma_hat^2 the
sum of the estimated components (negative estimates set to 0). Its scale is the result's d:
with var_templates = var_group_template = 0 and one sentence a cell it reduces to
stats.intervals' one-way model; with template variance, the sample's SD over X u Y (T
templates drawn) falls short of sigma by about a factor (T-1)/T of the template variance, so
the crossed d can be a little smaller than the result's d.

The variance of D. For a contrast vector a over the sentences, Var(D) = sum_c var_c
||Z_c' a||^2 over the components' incidence matrices: 2 var_words / n, 2 var_group_template
/ T and 2 var_residual / (n T) in a full n+n x T design (template main effects cancel); in an
unbalanced one (words of different kinds with different templates, sentences cut, a word
without a template) the templates' shares differ between X and Y and var_templates enters too.

Estimation. The components come from sequential sums of squares (Henderson's method I by
fitting constants, in the order words within groups, templates, group x template, word x
template cells, within cells) and their expectations E[SS_k] = sum_c var_c tr(P_k Z_c Z_c'),
solved as a triangular system. They are computed from group sums, never from the design
matrix: the words' span by its means, templates (and group x template) added with the words
absorbed, a system in their levels (_absorbed); time linear in the sentences (tests/
test_crossed_speed.py holds them to the projections on SVD bases). On a balanced design these are the classical ANOVA mean
squares, and Var(D)'s estimate is Clark 1973's quasi-F denominator (MS_words +
MS_group_x_template - MS_word_x_template) 2 / (n T); on an unbalanced one they are the
moment estimates, unbiased whatever the counts. Var(D)'s estimate is a combination of mean
squares with Satterthwaite's df (components estimated below 0 set to 0 and left out).
- anova-gpq (the default): the ANOVA route for the difference and generalized pivotal
  quantities (Weerahandi 1993) for the step to d, extending stats.intervals' gpq-words:
      delta* = (D - Z sqrt(Var(D)_hat df / chi2(df))) / sigma*,
  the difference's pivot Satterthwaite's t; sigma*^2 the sum of the components solved from
  independent pivots of the mean squares MS_k* = df_k ms_k / chi2(df_k) (exact on a balanced
  design, nominal df on an unbalanced one; the bench measures it), negatives set to 0. The
  interval is the (1-level)/2 and (1+level)/2 quantiles of delta* mapped to d_C; p is the t
  p-value of D with Satterthwaite's df, which is P(delta* <= 0) for greater, so p <=
  (1-level)/2 exactly when the interval's low end is above 0. Z is integrated out and the
  chi-square draws are quasi-random (stats.pivots): the ends move with the seed by ~1e-4.
- gpq-all: every mean square a pivot, Var(D)* the components' combination too. Wider than
  needed where a component with few df (templates, T-1) enters Var(D) (coverage up to 97.5%).
- anova-t: D +- t(df) SE over sigma_hat, sigma treated as known; p from the same t.
  Narrower where sigma is uncertain and d large (92.8% at 24+24 x 10, d 1.5).
- mixedlm-wald: statsmodels' MixedLM (REML, the components as variance components of one
  all-covering group, `exog_vc`), the group coefficient's Wald interval and z p-value over
  the REML sigma. Slower (0.1-1 s) and without df: it under-covers (92-94% at 8+8 x 5).
`bench/bench_crossed.py` measures their coverage and false-positive rate; anova-gpq is the
default on that evidence.

Prediction interval: where d would lie in one new template: the pivot with Var*(D) +
2 var_group_template* (the new template's own group x template effects; not anova-t's).
tau2 = 2 var_group_template / sigma^2 is the between-template variance of a template's d,
and i2 the share of the spread of per-template contrasts (same words) that templates make:
2 var_gt / (2 var_gt + var_residual (1/n_x + 1/n_y)).

Attributes as random (random_attributes=True, with each target sentence's cosine to each
attribute stimulus, and the attribute word of each stimulus): D = sum_a w_a Delta_a over the
attribute words a of A (and minus those of B), Delta_a the X-Y contrast of the cosines with a.
Attribute words sampled from a population add var_attr_A sum w_a^2 (+ the same for B) to
Var(D), var_attr the variance of the group x attribute effect: the spread of Delta_a over
a, minus what the word x attribute interaction (the residual of a words x attributes table
within each group) puts into it (Clark's MS_A - MS_WxA); both terms join Var(D)'s
Satterthwaite df (gpq-all: each a chi-square pivot). sigma stays the target model's (the SD
of s with these attributes), so the population d is as above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import pivots
from .intervals import caliskan_from_cohen
from .weat import InvalidInput

METHODS = ("auto", "anova-gpq", "gpq-all", "anova-t", "mixedlm-wald")
DEFAULT = "anova-gpq"   # by measured coverage and false-positive rate (bench/bench_crossed.py)
ALTERNATIVES = ("greater", "less", "two-sided")


@dataclass(frozen=True)
class CrossedResult:
    """d with an interval over words and templates as random factors (module docstring)."""
    d: float                 # the estimate of the population d (Caliskan's scale)
    ci_low: float
    ci_high: float
    level: float
    p: float                 # of the group contrast under the model, for `alternative`
    alternative: str
    method: str              # anova-gpq | gpq-all | anova-t | mixedlm-wald
    df: float                # Satterthwaite df of the contrast's variance (mixedlm-wald: inf)
    diff: float              # D = mean_X s - mean_Y s over the sentences (mixedlm-wald: the REML GLS estimate)
    se_diff: float           # its standard error under the model (attribute sampling included)
    sd: float                # sigma_hat, the SD d divides by
    var_words: float         # the variance components (negative estimates set to 0)
    var_templates: float
    var_group_template: float
    var_residual: float      # word x template and sentence noise
    var_attributes: float | None  # Var(D) from sampling attribute words (random_attributes), else None
    tau2: float              # 2 var_group_template / sd^2: between-template variance of a template's d
    i2: float                # share of the per-template contrasts' spread due to templates
    pi_low: float | None     # d in one new template (anova-gpq)
    pi_high: float | None
    n_words_x: int
    n_words_y: int
    n_templates: int
    n_cells: int             # word x template cells with a sentence
    n_missing_cells: int     # cells of the words x their group's templates grid without one
    n_x: int                 # sentences
    n_y: int
    scheme: str              # what is modelled, in words (stored with a result)

    @property
    def shares(self) -> dict[str, float]:
        """Each component's share of sigma^2 (words, templates, group_template, residual)."""
        parts = {"words": self.var_words, "templates": self.var_templates,
                 "group_template": self.var_group_template, "residual": self.var_residual}
        total = sum(parts.values())
        return {k: (v / total if total > 0 else float("nan")) for k, v in parts.items()}


@dataclass(frozen=True)
class _Design:
    """The sentences reduced to word x template cells (a word is nested in its group)."""
    g: np.ndarray            # per cell: 1 for X, 0 for Y
    w: np.ndarray            # per cell: word code (X's and Y's words are distinct codes)
    t: np.ndarray            # per cell: template code
    n: np.ndarray            # sentences per cell
    sums: np.ndarray         # sum of s per cell
    squares: float           # sum of s^2 over the sentences
    n_words: int
    n_words_x: int
    n_templates: int
    n_x: int
    n_y: int
    word_of: np.ndarray      # per sentence: word code
    cell_of: np.ndarray      # per sentence: cell code


def _codes(values) -> tuple[np.ndarray, dict]:
    index: dict = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    return codes, index


def _design(s, is_x, word, template, what) -> _Design:
    n = len(s)
    if not (len(is_x) == len(word) == len(template) == n):
        raise InvalidInput(f"{what}: s, is_x, word and template must have one entry per sentence "
                           f"(got {n}, {len(is_x)}, {len(word)}, {len(template)})")
    if not np.isfinite(s).all():
        raise InvalidInput(f"{what}: s holds NaN or infinite values")
    if not (is_x.any() and (~is_x).any()):
        raise InvalidInput(f"{what}: the crossed model needs sentences of both X and Y")
    wcode, _ = _codes(list(zip(is_x.tolist(), list(word))))    # a word is nested in its group
    tcode, tindex = _codes(list(template))
    n_templates = len(tindex)
    if n_templates < 2:
        raise InvalidInput(f"{what}: the targets use one template ({next(iter(tindex))!r}): "
                           "templates as a random factor need at least two")
    # X's words first, so codes 0..n_words_x-1 are X's
    wx = np.unique(wcode[is_x])
    wy = np.unique(wcode[~is_x])
    if len(wx) < 2 or len(wy) < 2:
        raise InvalidInput(f"{what}: words as a random factor need at least 2 words a side "
                           f"(got {len(wx)} and {len(wy)})")
    order = np.empty(wcode.max() + 1, dtype=np.int64)
    order[np.concatenate([wx, wy])] = np.arange(len(wx) + len(wy))
    wcode = order[wcode]
    ccode, _ = _codes(list(zip(wcode.tolist(), tcode.tolist())))
    first = np.unique(ccode, return_index=True)[1]
    counts = np.bincount(ccode).astype(np.float64)
    return _Design(
        g=is_x[first].astype(np.int64), w=wcode[first], t=tcode[first], n=counts,
        sums=np.bincount(ccode, weights=s), squares=float(np.sum(s ** 2)),
        n_words=len(wx) + len(wy), n_words_x=len(wx), n_templates=n_templates,
        n_x=int(is_x.sum()), n_y=int((~is_x).sum()), word_of=wcode, cell_of=ccode)


def _incidence(codes: np.ndarray, k: int | None = None) -> np.ndarray:
    k = int(codes.max()) + 1 if k is None else k
    m = np.zeros((len(codes), k))
    m[np.arange(len(codes)), codes] = 1.0
    return m


def _table(a: np.ndarray, ka: int, b: np.ndarray, kb: int, weights: np.ndarray) -> np.ndarray:
    """The (ka, kb) table of `weights` summed over the cells of each (a, b) pair of codes."""
    return np.bincount(a * kb + b, weights=weights, minlength=ka * kb).reshape(ka, kb)


def _sparse_table(a: np.ndarray, ka: int, b: np.ndarray, kb: int, weights: np.ndarray):
    """_table as a sparse matrix (duplicate pairs summed)."""
    from scipy import sparse

    return sparse.csr_matrix((weights, (a, b)), shape=(ka, kb))


@dataclass(frozen=True)
class _Factor:
    """One factor of the design: a code per cell and its number of levels."""
    code: np.ndarray
    k: int


def _span_of_factor(d: _Design, f: _Factor, comps: tuple[_Factor, ...]):
    """Reduction ||P b||^2, rank and tr(P Z_c Z_c') per component (and the cells' sum n_i P_ii)
    for P the projection on one factor's weighted indicator columns: group means."""
    n_f = np.bincount(f.code, weights=d.n, minlength=f.k)
    used = n_f > 0
    reduction = float(np.sum(np.bincount(f.code, weights=d.sums, minlength=f.k)[used] ** 2 / n_f[used]))
    coef = [float(np.sum(_table(f.code, f.k, c.code, c.k, d.n)[used] ** 2 / n_f[used, None])) for c in comps]
    cell = float(np.sum(np.bincount(f.code, weights=d.n ** 2, minlength=f.k)[used] / n_f[used]))
    return reduction, int(used.sum()), coef + [cell]


def _absorbed(d: _Design, cells: np.ndarray, w: _Factor, x: _Factor, comps: tuple[_Factor, ...]):
    """What the columns of factor x add to the span of factor w, on the cells `cells` (w
    absorbed: the normal equations of x's columns less their w means, C = X'M_W X, one row
    and column a level of x). The same quantities as _span_of_factor, from tables of counts:
    nothing of the size of the design is formed, so the cost is linear in the cells plus
    a dense eigendecomposition of x's levels (the caller solves on the smaller factor)."""
    n, sums = d.n[cells], d.sums[cells]
    wc = w.code[cells]
    levels, xc = np.unique(x.code[cells], return_inverse=True)   # only the levels these cells use
    x = _Factor(xc, len(levels))
    n_w = np.bincount(wc, weights=n, minlength=w.k)
    inv_w = np.divide(1.0, n_w, out=np.zeros(w.k), where=n_w > 0)
    n_wx = _table(wc, w.k, xc, x.k, n)
    a = n_wx * inv_w[:, None]                                          # the words' means of x's columns
    C = np.diag(np.bincount(xc, weights=n, minlength=x.k)) - n_wx.T @ a
    lam, vec = np.linalg.eigh(C)
    keep = lam > 1e-10 * max(float(lam[-1]), 1e-300)
    half = vec[:, keep] / np.sqrt(lam[keep])                           # C^+ = half @ half.T
    rb = np.bincount(xc, weights=sums, minlength=x.k) - a.T @ np.bincount(wc, weights=sums, minlength=w.k)
    reduction = float(np.sum((half.T @ rb) ** 2))
    coef = []
    for c in comps:
        cc = c.code[cells]
        # a' T(w, c) as a sparse product: T(w, c) holds one entry a cell, a' of it is dense and large
        rz = _table(xc, x.k, cc, c.k, n) - (_sparse_table(cc, c.k, wc, w.k, n) @ a).T
        coef.append(float(np.sum((half.T @ rz) ** 2)))
    n2 = n ** 2
    cross = _table(xc, x.k, wc, w.k, n2) @ a
    q = np.diag(np.bincount(xc, weights=n2, minlength=x.k)) - cross - cross.T + a.T @ (np.bincount(wc, weights=n2, minlength=w.k)[:, None] * a)
    cell = float(np.sum(half * (q @ half)))
    return reduction, int(keep.sum()), coef + [cell]


@dataclass(frozen=True)
class _Anova:
    names: tuple[str, ...]   # the components, in the order the rows identify them
    ss: np.ndarray           # sequential sums of squares, one row per component
    df: np.ndarray
    K: np.ndarray            # E[MS_k] = K[k] @ var (upper triangular)
    c: np.ndarray            # Var(D) = c @ var
    diff: float


def _anova(d: _Design, what: str) -> _Anova:
    """Sequential sums of squares with their expectations in the components (module docstring),
    from group sums: each space's projection is the words' means plus what templates (or
    group x template) add to them, solved on their levels with the words absorbed
    (_absorbed); the groups, words and cells have closed forms. Linear in the cells."""
    gt_code, _ = _codes(list(zip(d.g.tolist(), d.t.tolist())))
    words, templates = _Factor(d.w, d.n_words), _Factor(d.t, d.n_templates)
    group_template = _Factor(gt_code, int(gt_code.max()) + 1)
    comps = (words, templates, group_template)
    replicated = float(d.n.sum()) > len(d.n)
    names = ("words", "templates", "group_template") + (("word_template", "within") if replicated else ("residual",))
    everywhere = np.ones(len(d.n), bool)
    spans = [_span_of_factor(d, _Factor(d.g, 2), comps), _span_of_factor(d, words, comps)]
    # span(words, templates) = span(one) + what the other adds: the system is solved on the
    # factor with fewer levels (templates in a word test of many words, words in HolisticBias)
    if d.n_templates <= d.n_words:
        spans.append(_plus(spans[1], _absorbed(d, everywhere, words, templates, comps)))
        with_gt = spans[1]
        for g in (1, 0):   # words are nested in the groups: each group's group x template columns apart
            with_gt = _plus(with_gt, _absorbed(d, d.g == g, words, group_template, comps))
    else:
        spans.append(_plus(_span_of_factor(d, templates, comps), _absorbed(d, everywhere, templates, words, comps)))
        with_gt = _span_of_factor(d, group_template, comps)
        for g in (1, 0):
            with_gt = _plus(with_gt, _absorbed(d, d.g == g, group_template, words, comps))
    spans.append(with_gt)
    total = float(d.n.sum())
    reduction = [r for r, _, _ in spans] + [float(np.sum(d.sums ** 2 / d.n))]
    ranks = [k for _, k, _ in spans] + [len(d.n)]
    # the cells' space holds every incidence column: tr(Z_c Z_c') = N; the within component: its rank
    coefs = [c + ([float(k)] if replicated else []) for _, k, c in spans] + [[total] * 4 + ([float(len(d.n))] if replicated else [])]
    ss = np.diff(reduction)
    df = np.diff(ranks).astype(np.float64)
    K = np.diff(np.array(coefs), axis=0)
    if replicated:
        ss = np.append(ss, d.squares - reduction[-1])
        df = np.append(df, total - len(d.n))
        K = np.vstack([K, [0, 0, 0, 0, total - len(d.n)]])
    why = {"words": "at least 2 words a side",
           "templates": "templates that vary within words (every word is in one template)",
           "group_template": "a template that both X and Y use, and two templates in all "
                             "(X and Y share no template: templates are confounded with the groups)",
           "word_template": "a word in two templates", "residual": "a word in two templates",
           "within": "sentences"}
    for k, name in enumerate(names):
        if df[k] < 1 or K[k, k] <= 0:
            raise InvalidInput(f"{what}: the {name.replace('_', ' x ')} variance cannot be estimated: "
                               f"the design needs {why[name]}")
    K = K / df[:, None]
    # the contrast: +1/N_x on X's sentences, -1/N_y on Y's, summed per cell
    a = d.n * np.where(d.g == 1, 1.0 / d.n_x, -1.0 / d.n_y)
    c = [float(np.sum(np.bincount(f.code, weights=a, minlength=f.k) ** 2)) for f in comps]
    c += [float(np.sum(a ** 2)), 1.0 / d.n_x + 1.0 / d.n_y] if replicated else [float(np.sum(a ** 2))]
    diff = float(np.sum(a * d.sums / d.n))
    ms = ss / df
    if ms[-1] <= 0 and (not replicated or ms[-2] <= 0):
        raise InvalidInput(f"{what}: s does not vary within word x template cells or between them "
                           "beyond the fixed effects: the sampling error of d cannot be estimated")
    return _Anova(names, ss, df, K, np.array(c), diff)


def _plus(span, extra):
    """A space and the orthogonal part another factor adds to it: reductions, ranks and
    coefficients add."""
    return span[0] + extra[0], span[1] + extra[1], [a + b for a, b in zip(span[2], extra[2])]


def _components(an: _Anova, ms: np.ndarray) -> np.ndarray:
    """The components from mean squares (rows: components; columns: draws), negatives set to 0."""
    return np.maximum(np.linalg.solve(an.K, ms), 0.0)


def _reported(an: _Anova, var: np.ndarray) -> tuple[float, float, float, float]:
    """(words, templates, group x template, residual): word x template and within-cell
    variances reported together as the residual."""
    v = [float(x) for x in var]
    return v[0], v[1], v[2], float(sum(v[3:]))


def _satterthwaite(an: _Anova, var: np.ndarray, attrs=None, c=None) -> float:
    """Satterthwaite's df for the estimate of c @ var (default: Var(D)) as a combination of
    mean squares (components set to 0 drop out), with the attribute words' terms when sampled."""
    c = an.c if c is None else c
    lam = (c * (var > 0)) @ np.linalg.inv(an.K)
    terms, dfs = list(lam * an.ss / an.df), list(an.df)
    if attrs is not None:
        for i in np.flatnonzero(attrs.v - attrs.noise * attrs.res > 0):
            terms += [attrs.weight2[i] * attrs.v[i], -attrs.weight2[i] * attrs.noise[i] * attrs.res[i]]
            dfs += [attrs.k[i] - 1, attrs.res_df[i]]
    terms, dfs = np.array(terms), np.array(dfs, dtype=np.float64)
    den = float(np.sum(terms ** 2 / dfs))
    return float(np.sum(terms) ** 2 / den) if den > 0 else float("inf")


@dataclass(frozen=True)
class _Attributes:
    """What sampling the attribute words adds to Var(D), per attribute side."""
    v: np.ndarray            # the spread (ddof 1) of Delta_a over the side's attribute words
    k: np.ndarray            # attribute words per side
    res: np.ndarray          # the word x attribute residual variance per side
    res_df: np.ndarray
    noise: np.ndarray        # what one unit of residual variance puts into v: sum_w c_w^2
    weight2: np.ndarray      # sum_a w_a^2 per side

    def var(self, v=None, res=None):
        """Var(D) from the attribute words: per side max(v - noise res, 0) sum w_a^2, summed
        (v, res: the estimates, or draws with one column each)."""
        v = self.v if v is None else v
        res = self.res if res is None else res
        shape = (2,) + (1,) * (np.ndim(v) - 1)
        return np.sum(np.maximum(v - self.noise.reshape(shape) * res, 0) * self.weight2.reshape(shape), axis=0)


def _attributes(d: _Design, s, cos_a, cos_b, attribute_a, attribute_b, what) -> _Attributes:
    sides = []
    for name, cos, ids in (("A", cos_a, attribute_a), ("B", cos_b, attribute_b)):
        if cos is None:
            raise InvalidInput(f"{what}: random attributes need each sentence's cosine to every attribute stimulus "
                               f"(cos_a and cos_b)")
        cos = np.asarray(cos, dtype=np.float64)
        if cos.ndim != 2 or cos.shape[0] != len(s):
            raise InvalidInput(f"{what}: cos_{name.lower()} must have one row per sentence, got shape {cos.shape}")
        ids = np.arange(cos.shape[1]) if ids is None else np.asarray(ids)
        if len(ids) != cos.shape[1]:
            raise InvalidInput(f"{what}: {len(ids)} attribute ids for {cos.shape[1]} {name} stimuli")
        sides.append((name, cos, _codes(list(ids))[0]))
    s_from = sides[0][1].mean(axis=1) - sides[1][1].mean(axis=1)
    if not np.allclose(s_from, s, rtol=1e-6, atol=1e-9 * max(1.0, float(np.max(np.abs(s))))):
        raise InvalidInput(f"{what}: s is not mean(cos_a) - mean(cos_b): the cosines are not those of s")
    signs = np.where(np.isin(d.word_of, np.arange(d.n_words_x)), 1.0 / d.n_x, -1.0 / d.n_y)
    n_per_word = np.bincount(d.word_of, minlength=d.n_words).astype(np.float64)
    c_w = n_per_word * np.where(np.arange(d.n_words) < d.n_words_x, 1.0 / d.n_x, -1.0 / d.n_y)
    out = {k: [] for k in ("v", "k", "res", "res_df", "noise", "weight2")}
    for name, cos, unit in sides:
        k = int(unit.max()) + 1
        if k < 2:
            raise InvalidInput(f"{what}: attribute set {name} has one attribute word: its sampling variance "
                               "cannot be estimated (random attributes need two a side)")
        per_unit = np.bincount(unit, minlength=k).astype(np.float64)
        by_unit = cos @ _incidence(unit, k) / per_unit                     # sentences x attribute words
        delta = signs @ by_unit                                            # the X - Y contrast per attribute word
        table = (_incidence(d.word_of, d.n_words).T @ by_unit) / n_per_word[:, None]   # words x attribute words
        ss, df = 0.0, 0
        for rows in (slice(0, d.n_words_x), slice(d.n_words_x, d.n_words)):
            t = table[rows]
            r = t - t.mean(axis=1, keepdims=True) - t.mean(axis=0, keepdims=True) + t.mean()
            ss += float(np.sum(r ** 2))
            df += (t.shape[0] - 1) * (k - 1)
        out["v"].append(float(np.var(delta, ddof=1)))
        out["k"].append(k)
        out["res"].append(ss / df)
        out["res_df"].append(df)
        out["noise"].append(float(np.sum(c_w ** 2)))
        out["weight2"].append(float(np.sum((per_unit / per_unit.sum()) ** 2)))
    return _Attributes(**{k: np.array(v, dtype=np.float64) for k, v in out.items()})


def crossed_fit(s, is_x, word, template, *, alternative: str = "greater", level: float = 0.95,
                method: str = "auto", ddof: int = 1, random_attributes: bool = False,
                cos_a=None, cos_b=None, attribute_a=None, attribute_b=None,
                rng: np.random.Generator | None = None, n_draws: int = pivots.DEFAULT_DRAWS,
                what: str = "crossed model") -> CrossedResult:
    """d over target words x templates as crossed random factors (module docstring).

    s: s(w, A, B) per target sentence; is_x: True for X's sentences; word, template: a
    hashable id per sentence (the template: its frame, stimuli.factors). random_attributes:
    attribute words sampled too, from cos_a (sentences x A stimuli) and cos_b, with the
    attribute word of each stimulus in attribute_a / attribute_b (None: each stimulus its own
    word). rng seeds the quasi-random draws of anova-gpq (None: seed 0, so the interval is a
    function of the data)."""
    if method not in METHODS:
        raise InvalidInput(f"{what}: method must be one of {', '.join(METHODS)}, not {method!r}")
    if alternative not in ALTERNATIVES:
        raise InvalidInput(f"{what}: alternative must be one of {', '.join(ALTERNATIVES)}, not {alternative!r}")
    if not 0 < level < 1:
        raise InvalidInput(f"{what}: level must lie strictly between 0 and 1, not {level}")
    method = DEFAULT if method == "auto" else method
    s = np.asarray(s, dtype=np.float64)
    is_x = np.asarray(is_x, dtype=bool)
    d = _design(s, is_x, list(word), list(template), what)
    an = _anova(d, what)
    attrs = _attributes(d, s, cos_a, cos_b, attribute_a, attribute_b, what) if random_attributes else None
    ms = an.ss / an.df
    var = _components(an, ms)
    var_d = float(an.c @ var) + (float(attrs.var()) if attrs else 0.0)
    sd = float(np.sqrt(var.sum()))
    to_d = lambda delta: caliskan_from_cohen(delta, d.n_x, d.n_y, ddof)  # noqa: E731
    words, templates, gt, residual = _reported(an, var)
    per_template_noise = residual * (1.0 / d.n_words_x + 1.0 / (d.n_words - d.n_words_x))
    sizes = dict(
        n_words_x=d.n_words_x, n_words_y=d.n_words - d.n_words_x, n_templates=d.n_templates, n_cells=len(d.n),
        n_missing_cells=_missing(d), n_x=d.n_x, n_y=d.n_y)
    common = dict(
        level=level, alternative=alternative, var_words=words, var_templates=templates, var_group_template=gt,
        var_residual=residual, var_attributes=float(attrs.var()) if attrs else None,
        tau2=2 * gt / sd ** 2, i2=2 * gt / (2 * gt + per_template_noise) if gt + per_template_noise > 0 else 0.0,
        **sizes)
    units = (f"{d.n_words_x}+{d.n_words - d.n_words_x} words x {d.n_templates} templates, {len(d.n)} cells"
             + (f", {common['n_missing_cells']} empty" if common["n_missing_cells"] else ""))
    attr_text = "attribute words sampled" if attrs else "attributes fixed"
    if method == "mixedlm-wald":
        return _mixedlm(s, is_x, d, an, common, level, alternative, ddof, units, what)
    df = _satterthwaite(an, var, attrs)
    p = _t_p(an.diff / np.sqrt(var_d), df, alternative)
    probs = [(1 - level) / 2, (1 + level) / 2]
    if method == "anova-t":
        from scipy import stats as sps

        half = sps.t.ppf(probs[1], df) * np.sqrt(var_d)
        lo, hi = to_d(np.array([an.diff - half, an.diff + half]) / sd)
        return CrossedResult(d=float(to_d(an.diff / sd)), ci_low=float(lo), ci_high=float(hi), p=p, method=method,
                             df=df, diff=an.diff, se_diff=float(np.sqrt(var_d)), sd=sd, pi_low=None, pi_high=None,
                             scheme=f"Satterthwaite t for the difference over the moment-estimated SD ({units}); "
                                    f"words and templates sampled, {attr_text}", **common)
    rng = rng if rng is not None else np.random.default_rng(0)
    k = len(an.df)
    c_new = an.c + 2 * (np.arange(len(an.c)) == 2)     # one new template brings its own group x template effects
    if method == "anova-gpq":
        # the difference's variance as one Satterthwaite pivot (its df), the SD's components as pivots
        df_new = min(_satterthwaite(an, var, attrs, c_new), 1e7)
        chi = pivots.chi2_draws(np.r_[an.df, min(df, 1e7), df_new], n_draws, rng)
        var_s = _components(an, (an.df * ms)[:, None] / chi[:k])
        se_s = np.sqrt(var_d * min(df, 1e7) / chi[k])
        se_new = np.sqrt((var_d + 2 * gt) * df_new / chi[k + 1])
        scheme = "Satterthwaite pivot for the difference, generalized pivots of the crossed mean squares for the SD"
    else:  # gpq-all: every mean square a pivot, in the difference's variance too
        dfs = np.concatenate([an.df, np.concatenate([attrs.k - 1, attrs.res_df]) if attrs else []])
        chi = pivots.chi2_draws(dfs, n_draws, rng)
        var_s = _components(an, (an.df * ms)[:, None] / chi[:k])
        var_d_s = an.c @ var_s
        if attrs:
            var_d_s = var_d_s + attrs.var((attrs.k - 1)[:, None] * attrs.v[:, None] / chi[k:k + 2],
                                          attrs.res_df[:, None] * attrs.res[:, None] / chi[k + 2:k + 4])
        se_s, se_new = np.sqrt(var_d_s), np.sqrt(var_d_s + 2 * var_s[2])
        p = pivots.p_value(an.diff, se_s, alternative)
        scheme = "generalized pivots of the crossed mean squares for the difference and the SD"
    sigma_s = np.sqrt(var_s.sum(axis=0))
    lo, hi = to_d(pivots.quantiles(an.diff, se_s, sigma_s, probs))
    pi_lo, pi_hi = to_d(pivots.quantiles(an.diff, se_new, sigma_s, probs))
    return CrossedResult(
        d=float(to_d(an.diff / sd)), ci_low=float(lo), ci_high=float(hi), p=p, method=method, df=df, diff=an.diff,
        se_diff=float(np.sqrt(var_d)), sd=sd, pi_low=float(pi_lo), pi_high=float(pi_hi),
        scheme=f"{scheme} ({units}), mapped to Caliskan's d; words and templates sampled, {attr_text}", **common)


def _t_p(t: float, df: float, alternative: str) -> float:
    """The t p-value of the difference (Clark's quasi-F as a t, Satterthwaite's df)."""
    from scipy import stats as sps

    return float({"greater": sps.t.sf(t, df), "less": sps.t.cdf(t, df),
                  "two-sided": 2 * sps.t.sf(abs(t), df)}[alternative])


def _missing(d: _Design) -> int:
    """Cells of the grid words x the templates their group uses that hold no sentence."""
    missing = 0
    for g in (1, 0):
        mine = d.g == g
        missing += len(np.unique(d.w[mine])) * len(np.unique(d.t[mine])) - int(mine.sum())
    return missing


def _mixedlm(s, is_x, d: _Design, an: _Anova, common: dict, level, alternative, ddof, units, what) -> CrossedResult:
    """statsmodels' MixedLM by REML: the components as variance components of one group."""
    import warnings

    from scipy import stats as sps
    from statsmodels.regression.mixed_linear_model import MixedLM, VCSpec

    t_of = d.t[d.cell_of]
    g_of = is_x.astype(np.int64)
    gt, _ = _codes(list(zip(g_of.tolist(), t_of.tolist())))
    mats = {"words": _incidence(d.word_of), "templates": _incidence(t_of), "group_template": _incidence(gt)}
    if float(d.n.sum()) > len(d.n):
        mats["word_template"] = _incidence(d.cell_of)
    vc = VCSpec(list(mats), [[f"{k}{i}" for i in range(m.shape[1])] for k, m in mats.items()],
                [[m] for m in mats.values()])
    exog = np.column_stack([np.ones(len(s)), g_of.astype(np.float64)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = MixedLM(s, exog, groups=np.zeros(len(s)), exog_vc=vc).fit(reml=True)
    vcomp = dict(zip(mats, np.maximum(np.asarray(fit.vcomp, dtype=np.float64), 0)))
    sd = float(np.sqrt(sum(vcomp.values()) + fit.scale))
    beta, se = float(fit.fe_params[1]), float(fit.bse_fe[1])
    z = sps.norm.ppf((1 + level) / 2)
    to_d = lambda delta: caliskan_from_cohen(delta, d.n_x, d.n_y, ddof)  # noqa: E731
    lo, hi = to_d(np.array([beta - z * se, beta + z * se]) / sd)
    p = {"greater": sps.norm.sf(beta / se), "less": sps.norm.cdf(beta / se),
         "two-sided": 2 * sps.norm.sf(abs(beta / se))}[alternative]
    residual = float(fit.scale) + vcomp.get("word_template", 0.0)
    common = {**common, "var_words": vcomp["words"], "var_templates": vcomp["templates"],
              "var_group_template": vcomp["group_template"], "var_residual": residual,
              "tau2": 2 * vcomp["group_template"] / sd ** 2}
    return CrossedResult(d=float(to_d(beta / sd)), ci_low=float(lo), ci_high=float(hi), p=float(p), method="mixedlm-wald",
                         df=float("inf"), diff=beta, se_diff=se, sd=sd, pi_low=None, pi_high=None,
                         scheme=f"statsmodels MixedLM (REML) with a Wald interval over the REML SD ({units}); "
                                "words and templates sampled, attributes fixed", **common)
