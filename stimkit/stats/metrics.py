"""Association metrics beyond WEAT, as pure functions over arrays, with permutation p-values
and measures of how much they agree.

Every metric takes a test's four sets of vectors (rows): targets X, Y and attributes A, B,
mapped onto the metric the way WEFE 1.0.1 maps a `Query(target_sets, attribute_sets)`
(Badilla et al. 2020); each function's docstring says which role plays what. Signed
metrics are oriented like WEAT: positive when X goes with A and Y with B.

    name         paper                         roles                                   kind
    weat         Caliskan et al. 2017          WEFE WEAT: [X, Y] x [A, B]                signed
    gweat        Swinger et al. 2019           k groups X_i <-> A_i; here X<->A, Y<->B   signed
    ripa         Ethayarajh et al. 2019        WEFE RIPA: pairs (X_i, Y_i) x A, minus B  signed, pairs
    rnd          Garg et al. 2018              WEFE RND: groups [X, Y] x B, minus A      signed
    semaxis      An et al. 2018                axis A - B; X minus Y on it               signed
    ect          Dev & Phillips 2019           WEFE ECT: groups [X, Y] x (A u B)         coherence
    rnsb         Sweeney & Najafian 2019       WEFE RNSB: targets [X, Y] x classes [A, B]  magnitude
    mac          Manzini et al. 2019           WEFE MAC: targets [X, Y] x [A, B]         distance
    same         Schroeder et al. 2021         direction A - B; targets X u Y            magnitude
    direct_bias  Bolukbasi et al. 2016         direction from pairs (X_i, Y_i); A u B    magnitude, pairs

`compute(name, X, Y, A, B)` gives one value, `metric_p(...)` its permutation p-value
(None where no partition null is defined: `METRICS[name].null_reason` says why),
`sign_agreement` and `kendall_tau_matrix` compare metrics over a long frame of results.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Callable

import numpy as np

from .. import DEFAULT_BUDGET
from ..errors import InputError, UsageError
from . import sampler
from .pvalues import ALTERNATIVES, PValue, all_subsets, check_exact, min_p, permutation_p
from .weat import association, check_inputs, effect_size, unit_rows

@dataclass(frozen=True)
class Metric:
    name: str
    fn: Callable[..., float]          # fn(X, Y, A, B, rng=None) -> float
    needs_pairs: bool                 # X[i] and Y[i] form a pair: |X| == |Y| required
    has_permutation_null: bool        # metric_p defines a p-value by permuting X u Y
    reference: str
    kind: str = "signed"              # signed: > 0 when X~A, Y~B; magnitude: >= 0, larger = more bias;
    #                                   coherence: larger = less bias (ECT's rho); distance: MAC's mean distance
    null_reason: str | None = None    # why there is no permutation null, when there is none


# --------------------------------------------------------------------------- helpers

def _unit(m: np.ndarray) -> np.ndarray:
    return unit_rows(m)


def _cos(W: np.ndarray, v: np.ndarray) -> np.ndarray:
    """cos(w, v) for every row w of W and one vector v."""
    return _unit(W) @ (v / np.linalg.norm(v))


def _check(X, Y, A, B, what: str) -> tuple[np.ndarray, ...]:
    """The four sets as float arrays, after WEAT's refusals (`stats.check_inputs`: non-empty,
    finite, one width, no zero vector, at least 2 items per target set, X and Y not identical)."""
    check_inputs(X, Y, A, B, what)
    return tuple(np.asarray(m, dtype=np.float64) for m in (X, Y, A, B))


def _pairs(X: np.ndarray, Y: np.ndarray, what: str) -> np.ndarray:
    """x_i - y_i for each pair; refuses unequal lengths (a usage error: the test does not fit)."""
    if len(X) != len(Y):
        raise UsageError(f"{what} needs X and Y as word pairs (X[i], Y[i]): got {len(X)} and {len(Y)} items")
    diff = X - Y
    same = np.flatnonzero(np.linalg.norm(diff, axis=1) == 0)
    if same.size:
        raise InputError(f"{what}: pair {int(same[0])} has X[i] == Y[i]: its direction is undefined")
    return diff


# --------------------------------------------------------------------------- the metrics

def weat_d(X, Y, A, B, rng=None) -> float:
    """WEAT effect size d (Caliskan et al. 2017), ddof=1 as stimkit's WEAT.

    s(w) = mean_a cos(w, a) - mean_b cos(w, b);  d = (mean_X s - mean_Y s) / std_{X u Y}(s, ddof=1).
    Roles as WEFE's WEAT query ([X, Y], [A, B]). WEFE's effect size uses ddof=0:
    d_stimkit = d_WEFE * sqrt((N - 1) / N), N = |X| + |Y|."""
    X, Y, A, B = _check(X, Y, A, B, "weat")
    s = association(np.vstack([X, Y]), A, B)
    if np.std(s) == 0:
        raise InputError("weat: every target has the same association s(w): d is undefined (0/0)")
    return effect_size(s[:len(X)], s[len(X):])


def generalised_weat(targets, attributes) -> float:
    """Generalised WEAT statistic (Swinger et al. 2019) for k groups, target set X_i paired
    with attribute set A_i:

        m_j(x) = mean_{a in A_j} cos(x, a)
        S      = sum_i sum_{x in X_i} [ m_i(x) - (1/k) sum_j m_j(x) ]

    (each target's association with its own group's attributes, relative to the mean over
    all k attribute sets). For k = 2 it is exactly half the WEAT test statistic s(X, Y, A, B)."""
    if len(targets) != len(attributes) or len(targets) < 2:
        raise UsageError(f"gweat needs as many target sets as attribute sets, at least 2: "
                         f"got {len(targets)} and {len(attributes)}")
    means = np.column_stack([_unit(a).mean(axis=0) for a in attributes])     # (d, k)
    total = 0.0
    for i, T in enumerate(targets):
        m = _unit(T) @ means                                                 # (|X_i|, k): m_j(x)
        total += float((m[:, i] - m.mean(axis=1)).sum())
    return total


def gweat(X, Y, A, B, rng=None) -> float:
    """Generalised WEAT (Swinger et al. 2019) on a two-group test: X <-> A, Y <-> B
    (see `generalised_weat`); equals s(X, Y, A, B) / 2."""
    X, Y, A, B = _check(X, Y, A, B, "gweat")
    return generalised_weat([X, Y], [A, B])


def ripa(X, Y, A, B, rng=None) -> float:
    """RIPA, relational inner product association (Ethayarajh, Duvenaud & Hirst 2019).

    Relation vector of each target pair b_i = (x_i - y_i) / |x_i - y_i|; RIPA(w) = w . b_i
    (raw, unnormalised w). As WEFE's RIPA (template (2, 1): target sets [X, Y] are the pairs
    X[i], Y[i], one attribute set), averaged over pairs and attribute words:
        RIPA_WEFE(S) = mean_{s in S} mean_i s . b_i.
    On a 4-set test: ripa = RIPA_WEFE(A) - RIPA_WEFE(B) (> 0 when A lies towards X and B
    towards Y). Needs |X| == |Y| (pairs); a test with unequal target sets is refused."""
    X, Y, A, B = _check(X, Y, A, B, "ripa")
    diff = _pairs(X, Y, "ripa")
    b = (diff / np.linalg.norm(diff, axis=1, keepdims=True)).mean(axis=0)
    return float((A.mean(axis=0) - B.mean(axis=0)) @ b)


def rnd(X, Y, A, B, rng=None) -> float:
    """Relative norm distance (Garg, Schiebinger, Jurafsky & Zou 2018), Euclidean.

    Groups X, Y as centroids v_X, v_Y (raw means); as WEFE's RND (template (2, 1)):
        RND_WEFE(S) = mean_{s in S} (|s - v_X| - |s - v_Y|)   (< 0: S nearer X).
    Garg et al. sum over the neutral words; WEFE (and this) average. On a 4-set test:
    rnd = RND_WEFE(B) - RND_WEFE(A) (> 0 when A lies nearer X and B nearer Y, as WEAT)."""
    X, Y, A, B = _check(X, Y, A, B, "rnd")
    cx, cy = X.mean(axis=0), Y.mean(axis=0)

    def rnd_wefe(S):
        return float((np.linalg.norm(S - cx, axis=1) - np.linalg.norm(S - cy, axis=1)).mean())

    return rnd_wefe(B) - rnd_wefe(A)


def semaxis(X, Y, A, B, rng=None) -> float:
    """SemAxis (An, Kwak & Ahn 2018): the axis between two poles, v = mean(A) - mean(B)
    (raw pole vectors averaged), and score(w) = cos(w, v).
    Poles: attributes A (+) and B (-); value = mean_X score - mean_Y score."""
    X, Y, A, B = _check(X, Y, A, B, "semaxis")
    v = A.mean(axis=0) - B.mean(axis=0)
    if not np.linalg.norm(v):
        raise InputError("semaxis: A and B have the same mean: the axis is undefined")
    return float(_cos(X, v).mean() - _cos(Y, v).mean())


def _ranks(a: np.ndarray) -> np.ndarray:
    """Ranks (1..n) along each row, ties averaged as scipy.stats.rankdata; rows without ties
    by a double argsort (3x faster on 100,000 rows), rows with ties by rankdata."""
    order = np.argsort(a, axis=1)
    ranks = np.empty_like(a)
    np.put_along_axis(ranks, order, np.arange(1.0, a.shape[1] + 1)[None, :].repeat(len(a), 0), axis=1)
    tied = (np.diff(np.take_along_axis(a, order, axis=1), axis=1) == 0).any(axis=1)
    if tied.any():
        from scipy.stats import rankdata  # here: scipy.stats costs half a second to import

        ranks[tied] = rankdata(a[tied], axis=1)
    return ranks


def _spearman_rows(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Spearman's rho between rows u[i] and v[i] (Pearson of the ranks, ties averaged).

    A row without ties ranks 1..n both ways, so rho = (sum ru rv - n m^2) / (n (n^2 - 1) / 12),
    m = (n + 1) / 2, and sum ru rv is v's ranks read in u's sorted order: two argsorts, one
    scatter and one gather per batch, no rank array of u. Rows with a tie take `_ranks`."""
    R, n = u.shape
    ou, ov = np.argsort(u, axis=1), np.argsort(v, axis=1)
    su, sv = np.take_along_axis(u, ou, axis=1), np.take_along_axis(v, ov, axis=1)
    tied = (su[:, 1:] == su[:, :-1]).any(axis=1) | (sv[:, 1:] == sv[:, :-1]).any(axis=1)
    positions = np.arange(1.0, n + 1)
    rv = np.empty((R, n))
    rv.ravel()[(ov + (n * np.arange(R))[:, None]).ravel()] = np.tile(positions, R)   # v's ranks, by item
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (np.take_along_axis(rv, ou, axis=1) @ positions - n * ((n + 1) / 2) ** 2) / (n * (n * n - 1) / 12)
        if tied.any():
            ru, rt = _ranks(u[tied]), _ranks(v[tied])
            ru -= ru.mean(axis=1, keepdims=True)
            rt -= rt.mean(axis=1, keepdims=True)
            rho[tied] = (ru * rt).sum(axis=1) / np.sqrt((ru * ru).sum(axis=1) * (rt * rt).sum(axis=1))
    return rho


def ect(X, Y, A, B, rng=None) -> float:
    """Embedding coherence test (Dev & Phillips 2019): Spearman's rho between the cosine
    similarities of the attribute words to the two group centroids.

        rho = spearman( [cos(v_X, w)]_w, [cos(v_Y, w)]_w ),  w in A u B, v = raw mean.
    As WEFE's ECT (template (2, 1): groups [X, Y], one attribute set: here A u B, A first).
    1 = both groups rank the attributes alike (no bias); lower = more bias; no sign."""
    X, Y, A, B = _check(X, Y, A, B, "ect")
    W = np.vstack([A, B])
    if len(W) < 3:
        raise UsageError(f"ect needs at least 3 attribute words for a rank correlation, got {len(W)}")
    U = _unit(W).T
    rho = float(_spearman_rows(_unit(X.mean(axis=0)[None]) @ U, _unit(Y.mean(axis=0)[None]) @ U)[0])
    if not np.isfinite(rho):
        raise InputError("ect: the similarities to one centroid are all equal: rho is undefined")
    return rho


def logistic_fit(Z: np.ndarray, y: np.ndarray, C: float = 1.0) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression, deterministic (convex; Newton's method from zero):
    minimise C * sum_i log(1 + exp(-y_i (w . z_i + b))) + |w|^2 / 2, labels y in {-1, +1},
    intercept b not penalised: scikit-learn's LogisticRegression(C, solver="lbfgs") objective.

    Newton rather than L-BFGS: the objective is smooth and strictly convex (the penalty bounds
    w, and both labels occur), so Newton's steps converge quadratically, in about ten (d + 1)
    x (d + 1) solves, to the optimum L-BFGS approached in ~70 gradient steps (and without
    importing scipy.optimize). Each step is halved until the objective falls (Armijo)."""
    Z = np.asarray(Z, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    design = np.hstack([Z, np.ones((len(Z), 1))])
    penalised = np.ones(design.shape[1])
    penalised[-1] = 0.0  # the intercept is not penalised

    def objective(theta):
        return C * np.logaddexp(0.0, -y * (design @ theta)).sum() + 0.5 * (penalised * theta) @ theta

    theta = np.zeros(design.shape[1])
    value = objective(theta)
    for _ in range(200):
        margin = y * (design @ theta)
        s = np.exp(-np.logaddexp(0.0, margin))  # sigmoid(-margin), computed stably
        grad = -C * design.T @ (y * s) + penalised * theta
        hessian = C * (design.T * (s * (1.0 - s))) @ design + np.diag(penalised)
        step = np.linalg.solve(hessian, grad)
        decrement = grad @ step  # Newton's decrement squared: twice the predicted fall
        if decrement <= 1e-28 * max(1.0, abs(value)):
            break
        t = 1.0
        while True:
            trial = theta - t * step
            trial_value = objective(trial)
            if trial_value <= value - 1e-4 * t * decrement or t < 1e-10:
                break
            t *= 0.5
        theta, value = trial, trial_value
    return theta[:-1], float(theta[-1])


def rnsb_distribution(X, Y, A, B, C: float = 1.0) -> np.ndarray:
    """P(negative | t) for every target t in X then Y, normalised to sum to 1 (see `rnsb`)."""
    X, Y, A, B = _check(X, Y, A, B, "rnsb")
    Z = np.vstack([A, B])
    labels = np.concatenate([np.ones(len(A)), -np.ones(len(B))])
    w, b = logistic_fit(Z, labels, C)
    T = np.vstack([X, Y])
    p_neg = np.exp(-np.logaddexp(0.0, T @ w + b))       # sigmoid(-(w.t + b)) = P(y = -1 | t)
    return p_neg / p_neg.sum()


def rnsb(X, Y, A, B, rng=None, C: float = 1.0) -> float:
    """Relative negative sentiment bias (Sweeney & Najafian 2019).

    A logistic regression learns attribute A (positive, label +1) against B (negative, -1);
    each target's P(negative) is normalised over all targets into a distribution P, and
        RNSB = KL(P || uniform) = sum_t P(t) log(|T| P(t)),  T = X u Y.
    As WEFE's RNSB (template (n, 2): target sets pooled, attribute sets [positive, negative]),
    except for the classifier: WEFE fits scikit-learn's liblinear on a random 80% holdout
    split (seeded); this fits all attribute words with `logistic_fit` (deterministic, so
    `rng` is not needed). 0 = no target more negative than another; no sign."""
    P = rnsb_distribution(X, Y, A, B, C)
    return float(np.sum(P * np.log(len(P) * P)))


def mac(X, Y, A, B, rng=None) -> float:
    """Mean average cosine distance (Manzini, Lim, Tsvetkov & Black 2019):
        MAC = mean_{t in T} mean_{A_j} mean_{a in A_j} (1 - cos(t, a)),  T = X u Y, A_j in {A, B}.
    As WEFE's MAC (template (n, n): every target of every target set against every attribute
    set, all scores averaged). A mean distance, not a contrast: it has no sign."""
    X, Y, A, B = _check(X, Y, A, B, "mac")
    T = _unit(np.vstack([X, Y]))
    return float(1 - 0.5 * (T @ _unit(A).mean(axis=0) + T @ _unit(B).mean(axis=0)).mean())


def same(X, Y, A, B, rng=None) -> float:
    """SAME (Schroeder, Schulz, Kenneweg, Feldhans, Hinder & Hammer 2021), two attribute groups:
    bias direction d = mean_a a/|a| - mean_b b/|b|, and
        SAME(T) = mean_{t in T} |cos(t, d)|,  T = X u Y
    (the targets as one set of words whose bias is measured; A, B the groups). No sign."""
    X, Y, A, B = _check(X, Y, A, B, "same")
    d = _unit(A).mean(axis=0) - _unit(B).mean(axis=0)
    if not np.linalg.norm(d):
        raise InputError("same: A and B have the same mean unit vector: the direction is undefined")
    return float(np.abs(_cos(np.vstack([X, Y]), d)).mean())


def direct_bias(X, Y, A, B, rng=None, c: float = 1.0) -> float:
    """Direct bias (Bolukbasi, Chang, Zou, Saligrama & Kalai 2016):
        DirectBias_c = mean_{w in N} |cos(w, g)|^c,  c = 1,
    g the first principal component of the defining pairs, each centred on its own mean
    (rows x_i - mu_i and y_i - mu_i, mu_i = (x_i + y_i) / 2). Pairs (X[i], Y[i]) define g
    (|X| == |Y| required); the neutral words N are A u B. No sign."""
    X, Y, A, B = _check(X, Y, A, B, "direct_bias")
    diff = _pairs(X, Y, "direct_bias")
    centred = np.vstack([diff / 2, -diff / 2])            # already mean zero: PCA = SVD
    g = np.linalg.svd(centred, full_matrices=False)[2][0]
    return float((np.abs(_cos(np.vstack([A, B]), g)) ** c).mean())


_PAIRS_NULL = ("the pairs (X[i], Y[i]) define its direction: moving items between X and Y "
               "breaks the pairs (the exchangeable null for pairs is a within-pair swap, not a partition)")
_POOLED_NULL = "it pools X and Y into one target set: every partition of X u Y gives the same value"

METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("weat", weat_d, False, True, "Caliskan, Bryson & Narayanan 2017, Science 356(6334)"),
    Metric("gweat", gweat, False, True, "Swinger, De-Arteaga, Heffernan, Leiserson & Kalai 2019, AIES"),
    Metric("ripa", ripa, True, False, "Ethayarajh, Duvenaud & Hirst 2019, ACL", null_reason=_PAIRS_NULL),
    Metric("rnd", rnd, False, True, "Garg, Schiebinger, Jurafsky & Zou 2018, PNAS 115(16)"),
    Metric("semaxis", semaxis, False, True, "An, Kwak & Ahn 2018, ACL"),
    Metric("ect", ect, False, True, "Dev & Phillips 2019, AISTATS", kind="coherence"),
    Metric("rnsb", rnsb, False, False, "Sweeney & Najafian 2019, ACL", kind="magnitude", null_reason=_POOLED_NULL),
    Metric("mac", mac, False, False, "Manzini, Lim, Tsvetkov & Black 2019, NAACL", kind="distance",
           null_reason=_POOLED_NULL),
    Metric("same", same, False, False, "Schroeder et al. 2021, arXiv:2111.07864", kind="magnitude",
           null_reason=_POOLED_NULL),
    Metric("direct_bias", direct_bias, True, False, "Bolukbasi, Chang, Zou, Saligrama & Kalai 2016, NeurIPS",
           kind="magnitude", null_reason=_PAIRS_NULL),
)}


def metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise UsageError(f"unknown metric {name!r} (known: {', '.join(METRICS)})") from None


def parse_metrics(spec: str) -> list[str]:
    """'weat,ripa,ect' -> ['weat', 'ripa', 'ect'], each name checked, order kept, no repeats."""
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise UsageError("--metric names no metric")
    for n in names:
        metric(n)
    return list(dict.fromkeys(names))


def compute(name: str, X, Y, A, B, rng: np.random.Generator | None = None) -> float:
    """The value of metric `name` on the test (X, Y, A, B)."""
    return float(metric(name).fn(X, Y, A, B, rng=rng))


# --------------------------------------------------------------------------- permutation p

def _per_item(name: str, X, Y, A, B) -> np.ndarray:
    """Per-target values f(w) for metrics that are increasing affine in sum_{X_i} f(w) over
    partitions (the pooled statistics, std_{X u Y} and the attribute side, are fixed)."""
    W = np.vstack([X, Y])
    if name == "semaxis":
        return _cos(W, A.mean(axis=0) - B.mean(axis=0))
    return association(W, A, B)      # weat: d; gweat: s(X, Y, A, B) / 2


class _CentroidNull:
    """rnd and ect over partitions given as 0/1 rows z (z_i = 1: item i of X u Y is in X_i).

    With S = z W the sum over X_i and T the sum over all, everything either metric needs is
    linear or quadratic in z over small precomputed products: S . v = z (W v) for each
    attribute v, |S|^2 = z K z with K = W W', S . T = z (W T). So a batch of partitions costs
    two matrix products of (rows x N), never a (rows x dim) array of vector sums."""

    def __init__(self, name: str, X, Y, A, B):
        self.name, self.nx, self.ny = name, len(X), len(Y)
        W = np.vstack([X, Y])
        self.V = np.vstack([A, B])
        self.na = len(A)
        self.G = W @ self.V.T                       # (N, n_attr): w . v
        self.T = W.sum(axis=0)
        self.TV = self.T @ self.V.T                 # T . v
        self.K, self.WT, self.TT = W @ W.T, W @ self.T, float(self.T @ self.T)
        self.vv = (self.V * self.V).sum(axis=1)     # |v|^2
        self.vn = np.sqrt(self.vv)

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        SV = Z @ self.G
        if self.name == "ect":
            # cos(c, v) ranks over v as (c . v) / |v| does: |c| is one positive number per row
            return _spearman_rows(SV / self.vn, (self.TV - SV) / self.vn)
        SS = np.einsum("ij,ij->i", Z @ self.K, Z)
        RR = self.TT - 2 * (Z @ self.WT) + SS       # |T - S|^2
        # |v - c_X|^2 = |v|^2 - 2 v.S / n_x + |S|^2 / n_x^2 (and for Y), in place: the (rows x
        # attributes) arrays are the cost here
        dx = SV * (-2 / self.nx)
        dx += self.vv
        dx += (SS / self.nx ** 2)[:, None]
        dy = SV * (2 / self.ny)
        dy += self.vv - 2 * self.TV / self.ny
        dy += (RR / self.ny ** 2)[:, None]
        for d in (dx, dy):
            np.maximum(d, 0, out=d)
            np.sqrt(d, out=d)
        dx -= dy                                    # |v - c_X| - |v - c_Y| for every attribute v
        return dx[:, self.na:].mean(axis=1) - dx[:, :self.na].mean(axis=1)


def _masks(idx: np.ndarray, N: int) -> np.ndarray:
    """0/1 rows from index rows (row r holds the items idx[r])."""
    Z = np.zeros((len(idx), N))
    Z.ravel()[(idx + (N * np.arange(len(idx)))[:, None]).ravel()] = 1.0
    return Z


_ROWS = 1 << 14   # partitions per batch: the (rows x N) masks stay a few MB


def metric_p(name: str, X, Y, A, B, alternative: str = "greater", method: str = "auto",
             budget: int = DEFAULT_BUDGET, rng: np.random.Generator | None = None) -> PValue | None:
    """Permutation p-value of metric `name` over the equal-size partitions (X_i, Y_i) of X u Y,
    as `stats.permutation_p`: exact enumeration when C(|X|+|Y|, |X|) <= budget (auto), else
    `budget - 1` sampled partitions with the observed one counted once (p >= 1/budget).
    The alternative is on the metric's value: greater P(T >= t), less P(T <= t), two-sided
    P(|T - m| >= |t - m|), m the mean of the null (exact: over all partitions; sampled: of
    the drawn ones and the observed). ECT shows bias by a low rho: see `bias_alternative`.
    None where no partition null is defined (`METRICS[name].null_reason`).

    weat, gweat, semaxis are increasing affine functions of sum_{X_i} f(w) for a per-target
    f, so they go through `stats.permutation_p` (the same sampler and p as stimkit's WEAT).
    rnd and ect depend on the centroids of X_i and Y_i: their partitions are 0/1 masks
    (all of them in itertools order, or uniform |X|-subsets drawn as bits by the sampler,
    `sampler.subset_masks`), evaluated in batches by `_CentroidNull`."""
    m = metric(name)
    if not m.has_permutation_null:
        return None
    if alternative not in ALTERNATIVES:
        raise UsageError(f"alternative must be one of {', '.join(ALTERNATIVES)}, not {alternative!r}")
    if method not in ("auto", "exact", "sampled"):
        raise UsageError(f"metric p-values are exact or sampled (auto picks), not {method!r}")
    m.fn(X, Y, A, B)                                  # refuses what the metric refuses, first
    X, Y, A, B = _check(X, Y, A, B, name)
    rng = rng if rng is not None else np.random.default_rng()
    if name in ("weat", "gweat", "semaxis"):
        return permutation_p(_per_item(name, X, Y, A, B), len(X), alternative, method, budget, rng)
    nx, N = len(X), len(X) + len(Y)
    stat = _CentroidNull(name, X, Y, A, B)
    partitions = comb(N, nx)
    observed = float(stat(_masks(np.arange(nx)[None], N))[0])
    if method == "auto":
        method = "exact" if partitions <= budget else "sampled"
    floor = min_p(partitions, method, budget, alternative, symmetric=False)
    if method == "exact":
        check_exact(partitions, name)
        idx = all_subsets(N, nx)
        null = _evaluate(stat, (_masks(idx[i:i + _ROWS], N) for i in range(0, len(idx), _ROWS)))
        hits = _hits(null, observed, alternative, float(null.mean()))
        return PValue(hits / partitions, "exact", partitions, partitions, floor)
    null = _evaluate(stat, (sampler.subset_masks(N, nx, rows, rng).astype(np.float64) for rows in _batches(budget - 1)))
    hits = _hits(null, observed, alternative, float((null.sum() + observed) / budget))
    return PValue((1 + hits) / budget, "sampled", budget, partitions, floor)


def _evaluate(stat, batches) -> np.ndarray:
    """`stat` over every batch of partitions, in order: two batches at a time on the sampler's
    two threads (numpy's sorts and matrix products release the GIL), the next batch drawn here
    meanwhile. The draws happen in this thread, in order, so threads never change a result."""
    from collections import deque

    pending, out = deque(), []
    for Z in batches:
        pending.append(sampler.threads().submit(stat, Z))
        if len(pending) > 2:
            out.append(pending.popleft().result())
    out += [f.result() for f in pending]
    return np.concatenate(out)


def _batches(total: int):
    while total > 0:
        yield min(total, _ROWS)
        total -= _ROWS


def bias_alternative(name: str, alternative: str = "greater") -> str:
    """The alternative on the metric's value that tests `alternative` on the bias: the same
    for signed metrics (greater: X with A, Y with B), flipped for ECT (bias lowers rho)."""
    if metric(name).kind != "coherence" or alternative == "two-sided":
        return alternative
    return "less" if alternative == "greater" else "greater"


def _hits(null: np.ndarray, observed: float, alternative: str, center: float) -> int:
    # ties within 1e-11 of the scale count as reaching the observed value (the observed
    # partition recomputed from another sum order differs in the last bits)
    tol = 1e-11 * max(1.0, abs(observed), float(np.abs(null).max()))
    if alternative == "greater":
        return int((null >= observed - tol).sum())
    if alternative == "less":
        return int((null <= observed + tol).sum())
    return int((np.abs(null - center) >= abs(observed - center) - tol).sum())


# --------------------------------------------------------------------------- agreement

def strength(name: str, value: float) -> float:
    """How much bias a value shows, larger = more, comparable in rank across kinds:
    |value| for signed metrics, the value for magnitudes, -value for ECT's rho and MAC's
    distance (closer or less coherent = more)."""
    kind = metric(name).kind
    if kind == "signed":
        return abs(value)
    return value if kind == "magnitude" else -value


def _frame(rows):
    import polars as pl

    df = rows if isinstance(rows, pl.DataFrame) else pl.DataFrame(rows)
    need = {"test", "encoder", "metric", "value"}
    if need - set(df.columns):
        raise UsageError(f"agreement needs columns {sorted(need)}; missing {sorted(need - set(df.columns))}")
    if "p" not in df.columns:
        df = df.with_columns(pl.lit(None, dtype=pl.Float64).alias("p"))
    return df


def sign_agreement(rows, alpha: float = 0.05):
    """Per (test, encoder): do the metrics agree in sign and in decision?

    rows: a long frame (polars DataFrame, or what `polars.DataFrame` takes, e.g. a dict of
    arrays) with columns test, encoder, metric, value and optionally p (null where a metric
    has no p-value). Sign: only signed metrics (METRICS[m].kind == 'signed') count; a zero
    value has no sign. Decision: p <= alpha (stats.decision), over the metrics with a p-value.
    Returns one row per (test, encoder): n_metrics, n_signed, n_positive, n_negative,
    signs_agree (None with fewer than 2 signed), sign (+1, -1, 0 when they disagree, None
    with none signed), n_with_p, n_significant, decisions_agree (None with fewer than 2
    p-values). A decision is p <= alpha alone: with one-sided p-values (the runner's default,
    greater) a significant result also has the expected direction."""
    import polars as pl

    from .decision import significant

    df = _frame(rows)
    signed = [n for n, m in METRICS.items() if m.kind == "signed"]
    is_signed = pl.col("metric").is_in(signed)
    out = (df.group_by("test", "encoder", maintain_order=True).agg(
        pl.len().alias("n_metrics"),
        is_signed.sum().alias("n_signed"),
        (is_signed & (pl.col("value") > 0)).sum().alias("n_positive"),
        (is_signed & (pl.col("value") < 0)).sum().alias("n_negative"),
        pl.col("p").is_not_null().sum().alias("n_with_p"),
        significant(pl.col("p"), alpha).sum().alias("n_significant"),
    ))
    return out.with_columns(
        pl.when(pl.col("n_signed") < 2).then(None)
        .otherwise((pl.col("n_positive") == pl.col("n_signed")) | (pl.col("n_negative") == pl.col("n_signed")))
        .alias("signs_agree"),
        pl.when(pl.col("n_signed") == 0).then(None)
        .when(pl.col("n_positive") == pl.col("n_signed")).then(1)
        .when(pl.col("n_negative") == pl.col("n_signed")).then(-1).otherwise(0).alias("sign"),
        pl.when(pl.col("n_with_p") < 2).then(None)
        .otherwise((pl.col("n_significant") == 0) | (pl.col("n_significant") == pl.col("n_with_p")))
        .alias("decisions_agree"),
    )


def kendall_tau_matrix(rows, by_strength: bool = False):
    """Kendall's tau-b (scipy.stats.kendalltau) between every pair of metrics, over the
    (test, encoder) cells where both have a value.

    by_strength=False ranks the values as they are (meaningful between signed metrics);
    True ranks `strength(metric, value)`, so signed and unsigned metrics compare.
    Returns rows metric_a, metric_b (a < b in METRICS order), n, tau, p (NaN with n < 2)."""
    import polars as pl
    from scipy.stats import kendalltau

    df = _frame(rows)
    if by_strength:
        df = df.with_columns(pl.struct("metric", "value").map_elements(
            lambda r: strength(r["metric"], r["value"]), return_dtype=pl.Float64).alias("value"))
    wide = df.pivot(on="metric", index=["test", "encoder"], values="value", aggregate_function="first")
    order = {n: i for i, n in enumerate(METRICS)}
    names = sorted((c for c in wide.columns if c not in ("test", "encoder")), key=lambda n: (order.get(n, 99), n))
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = wide.select(a, b).drop_nulls()
            if both.height < 2:
                tau = p = float("nan")
            else:
                res = kendalltau(both[a].to_numpy(), both[b].to_numpy())
                tau, p = float(res.statistic), float(res.pvalue)
            out.append({"metric_a": a, "metric_b": b, "n": both.height, "tau": tau, "p": p})
    return pl.DataFrame(out, schema={"metric_a": pl.Utf8, "metric_b": pl.Utf8, "n": pl.Int64,
                                     "tau": pl.Float64, "p": pl.Float64})
