"""stimkit.stats.metrics against an independent oracle.

WEFE 1.0.1 on the same GloVe vectors (a gensim KeyedVectors holding exactly the vectors
stimkit uses) for every catalog word test, where WEFE defines the metric the same way;
a hand or brute-force computation (or scikit-learn) where it does not; permutation p-values
against brute-force enumeration with itertools.combinations.
"""

from __future__ import annotations

import importlib.util
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import cosine as cos_dist

from stimkit.errors import InputError, UsageError
from stimkit import stats as core
from stimkit.stats import metrics as M

_spec = importlib.util.spec_from_file_location("bench_metrics", Path(__file__).parents[1] / "bench" / "bench_metrics.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

TOL = 1e-6


@pytest.fixture(scope="module")
def catalog():
    """{test: ((X, Y, A, B) as {text: vector}, (X, Y, A, B) as arrays)} on GloVe, one test
    per distinct quadruple of word sets (the catalog's heilman/weat_hdb/weat_r_hdb/abw
    variants differ only in their sentence forms: as word tests they repeat each other)."""
    sets = bench.catalog_word_sets(bench.glove())
    distinct = {}
    for t, s in sets.items():
        distinct.setdefault(tuple(tuple(x) for x in s), t)
    return {t: (sets[t], bench.arrays(sets[t])) for t in distinct.values()}


@pytest.fixture(scope="module")
def model(catalog):
    """WEFE's model over a KeyedVectors holding the same float64 vectors (multi-word terms
    under their text, with stimkit's mean of token vectors). Skips where wefe is not installed
    (pyproject's `oracle` extra says how to install it)."""
    pytest.importorskip("wefe")
    from gensim.models import KeyedVectors
    from wefe.word_embedding_model import WordEmbeddingModel

    vocab = {w: v for sets, _ in catalog.values() for s in sets for w, v in s.items()}
    kv = KeyedVectors(50, dtype=np.float64)
    kv.add_vectors(list(vocab), np.array(list(vocab.values())))
    return WordEmbeddingModel(kv, "glove-6b-50d")


def query(targets, attributes):
    from wefe.query import Query

    return Query([list(t) for t in targets], [list(a) for a in attributes])


def run(metric, q, model, **kw):
    return float(metric.run_query(q, model, lost_vocabulary_threshold=0.0, **kw)["result"])


def test_catalog_has_the_word_tests(catalog):
    assert len(bench.catalog_word_sets(bench.glove())) == 42
    assert len(catalog) >= 25 and {f"weat{i}" for i in range(1, 11)} <= set(catalog)
    for t, (_, arrays) in catalog.items():
        assert all(len(a) >= 4 for a in arrays), t


# --------------------------------------------------------------------------- against WEFE

def test_weat_equals_wefe_effect_size_rescaled(catalog, model):
    """WEFE's d divides by the ddof=0 standard deviation, stimkit's by ddof=1:
    d_stimkit = d_WEFE * sqrt((N - 1) / N)."""
    from wefe.metrics import WEAT

    for t, (words, (X, Y, A, B)) in catalog.items():
        d_wefe = float(WEAT().run_query(query(words[:2], words[2:]), model, lost_vocabulary_threshold=0.0,
                                        return_effect_size=True)["effect_size"])
        N = len(X) + len(Y)
        assert M.compute("weat", X, Y, A, B) == pytest.approx(d_wefe * np.sqrt((N - 1) / N), abs=TOL), t


def test_ripa_equals_wefe_on_a_minus_b(catalog, model):
    from wefe.metrics import RIPA

    for t, (words, (X, Y, A, B)) in catalog.items():
        expected = run(RIPA(), query(words[:2], [words[2]]), model) - run(RIPA(), query(words[:2], [words[3]]), model)
        assert M.compute("ripa", X, Y, A, B) == pytest.approx(expected, abs=TOL), t


def test_rnd_equals_wefe_on_b_minus_a(catalog, model):
    from wefe.metrics import RND

    for t, (words, (X, Y, A, B)) in catalog.items():
        expected = run(RND(), query(words[:2], [words[3]]), model) - run(RND(), query(words[:2], [words[2]]), model)
        assert M.compute("rnd", X, Y, A, B) == pytest.approx(expected, abs=TOL), t


def test_ect_equals_wefe_on_pooled_attributes(catalog, model):
    from wefe.metrics import ECT

    for t, (words, (X, Y, A, B)) in catalog.items():
        expected = run(ECT(), query(words[:2], [list(words[2]) + list(words[3])]), model)
        assert M.compute("ect", X, Y, A, B) == pytest.approx(expected, abs=TOL), t


def test_mac_equals_wefe(catalog, model):
    from wefe.metrics import MAC

    for t, (words, (X, Y, A, B)) in catalog.items():
        assert M.compute("mac", X, Y, A, B) == pytest.approx(run(MAC(), query(words[:2], words[2:]), model), abs=TOL), t


class OurLogit:
    """stimkit's logistic fit in the estimator shape WEFE's RNSB calls (fit, predict_proba, score)."""

    def fit(self, Z, y):
        self.w, self.b = M.logistic_fit(Z, y)
        self.classes_ = np.array([-1.0, 1.0])
        return self

    def predict_proba(self, Z):
        p_pos = 1 / (1 + np.exp(-(np.asarray(Z) @ self.w + self.b)))
        return np.column_stack([1 - p_pos, p_pos])

    def score(self, Z, y):
        return float(np.mean(np.where(self.predict_proba(Z)[:, 1] > 0.5, 1, -1) == y))


def test_rnsb_equals_wefe_given_the_same_classifier(catalog, model):
    """WEFE fits liblinear on a random 80% split; given our (deterministic, full-data) fit as
    its estimator with holdout off, WEFE's pooling, normalisation and KL equal ours."""
    from wefe.metrics import RNSB

    for t, (words, (X, Y, A, B)) in catalog.items():
        expected = run(RNSB(), query(words[:2], words[2:]), model, estimator=OurLogit, estimator_params={},
                       holdout=False)
        assert M.compute("rnsb", X, Y, A, B) == pytest.approx(expected, abs=TOL), t


def test_logistic_fit_equals_scikit_learn(catalog):
    sk = pytest.importorskip("sklearn.linear_model")
    for t in ("weat1", "weat6", "weat9"):
        _, (X, Y, A, B) = catalog[t]
        Z, y = np.vstack([A, B]), np.r_[np.ones(len(A)), -np.ones(len(B))]
        ref = sk.LogisticRegression(C=1.0, solver="lbfgs", tol=1e-12, max_iter=100_000).fit(Z, y)
        w, b = M.logistic_fit(Z, y)
        T = np.vstack([X, Y])
        ours = 1 / (1 + np.exp(T @ w + b))
        assert np.allclose(ours, ref.predict_proba(T)[:, 0], atol=1e-6), t


def test_logistic_fit_is_the_optimum_its_gradient_zero(catalog):
    """By hand: at the fit, the objective's gradient (C = 1) vanishes to rounding, so any
    correct solver finds the same (w, b); and no nearby point has a lower objective."""
    for t in ("weat1", "weat3", "weat7"):
        _, (X, Y, A, B) = catalog[t]
        Z, y = np.vstack([A, B]).astype(np.float64), np.r_[np.ones(len(A)), -np.ones(len(B))]
        w, b = M.logistic_fit(Z, y)
        s = 1 / (1 + np.exp(y * (Z @ w + b)))
        assert np.abs(-(Z.T @ (y * s)) + w).max() < 1e-9 and abs((y * s).sum()) < 1e-9, t

        def objective(w_, b_):
            return np.logaddexp(0, -y * (Z @ w_ + b_)).sum() + 0.5 * w_ @ w_

        rng = np.random.default_rng(0)
        best = objective(w, b)
        assert all(objective(w + 1e-3 * rng.normal(size=w.shape), b + 1e-3 * rng.normal()) > best for _ in range(20))


# --------------------------------------------------------------------------- by hand where WEFE has none

def _cos(u, v):
    return 1 - cos_dist(u, v)


def test_gweat_by_hand_and_half_the_weat_statistic(catalog):
    """Swinger et al.'s statistic with explicit loops; for two groups it is s(X, Y, A, B) / 2."""
    for t, (_, (X, Y, A, B)) in catalog.items():
        groups = [(X, A), (Y, B)]
        hand = 0.0
        for x_set, own in groups:
            for x in x_set:
                means = [np.mean([_cos(x, a) for a in attr]) for _, attr in groups]
                hand += np.mean([_cos(x, a) for a in own]) - np.mean(means)
        ours = M.compute("gweat", X, Y, A, B)
        assert ours == pytest.approx(hand, abs=1e-9), t
        s = core.association(np.vstack([X, Y]), A, B)
        assert ours == pytest.approx(core.test_statistic(s[:len(X)], s[len(X):]) / 2, abs=1e-9), t


def test_semaxis_by_hand(catalog):
    for t, (_, (X, Y, A, B)) in catalog.items():
        axis = np.mean(A, axis=0) - np.mean(B, axis=0)
        hand = np.mean([_cos(x, axis) for x in X]) - np.mean([_cos(y, axis) for y in Y])
        assert M.compute("semaxis", X, Y, A, B) == pytest.approx(hand, abs=1e-9), t


def test_same_by_hand(catalog):
    for t, (_, (X, Y, A, B)) in catalog.items():
        d = np.mean([a / np.linalg.norm(a) for a in A], axis=0) - np.mean([b / np.linalg.norm(b) for b in B], axis=0)
        hand = np.mean([abs(_cos(w, d)) for w in np.vstack([X, Y])])
        assert M.compute("same", X, Y, A, B) == pytest.approx(hand, abs=1e-9), t


def test_direct_bias_against_scikit_learn_pca(catalog):
    """The gender direction as EmbeddingBiasScores computes it: each pair centred on its
    mean, scikit-learn's PCA, first component; then mean |cos| over A u B (c = 1)."""
    decomposition = pytest.importorskip("sklearn.decomposition")
    for t, (_, (X, Y, A, B)) in catalog.items():
        mu = (X + Y) / 2
        g = decomposition.PCA().fit(np.vstack([X - mu, Y - mu])).components_[0]
        hand = np.mean([abs(_cos(w, g)) for w in np.vstack([A, B])])
        assert M.compute("direct_bias", X, Y, A, B) == pytest.approx(hand, abs=1e-9), t


# --------------------------------------------------------------------------- invariants and refusals

def _small(seed=0, nx=5, ny=5, na=4, nb=4, dim=6):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(nx, dim)) + 0.5, rng.normal(size=(ny, dim)), rng.normal(size=(na, dim)) + 0.5,
            rng.normal(size=(nb, dim)))


def test_signed_metrics_flip_with_x_and_y_and_with_a_and_b():
    X, Y, A, B = _small()
    for name, m in M.METRICS.items():
        v = M.compute(name, X, Y, A, B)
        if m.kind == "signed":
            assert M.compute(name, Y, X, A, B) == pytest.approx(-v, abs=1e-12), name
            assert M.compute(name, X, Y, B, A) == pytest.approx(-v, abs=1e-12), name
        elif name not in ("rnsb",):   # rnsb's classes are ordered (A positive, B negative)
            assert M.compute(name, Y, X, A, B) == pytest.approx(v, abs=1e-12), name


def test_refusals_are_one_line():
    X, Y, A, B = _small(nx=5, ny=4)
    for name in ("ripa", "direct_bias"):
        with pytest.raises(UsageError, match=r"needs X and Y as word pairs .* got 5 and 4 items"):
            M.compute(name, X, Y, A, B)
    with pytest.raises(UsageError, match="unknown metric 'nope'"):
        M.compute("nope", X, Y, A, B)
    with pytest.raises(UsageError, match="unknown metric 'nope'"):
        M.parse_metrics("weat, nope")
    assert M.parse_metrics("weat,ripa, weat") == ["weat", "ripa"]
    with pytest.raises(InputError, match="set A holds NaN"):
        M.compute("mac", X, Y, np.full_like(A, np.nan), B)
    with pytest.raises(UsageError, match="at least 3 attribute words"):
        M.compute("ect", X, Y, A[:1], B[:1])


# --------------------------------------------------------------------------- permutation p

def brute_p(name, X, Y, A, B, alternative):
    """Every equal-size partition with itertools.combinations, the metric recomputed on each."""
    W = np.vstack([X, Y])
    idx = set(range(len(W)))
    null = np.array([M.compute(name, W[list(c)], W[sorted(idx - set(c))], A, B)
                     for c in combinations(range(len(W)), len(X))])
    t = M.compute(name, X, Y, A, B)
    tol = 1e-9 * max(1.0, abs(t))
    if alternative == "greater":
        return np.mean(null >= t - tol)
    if alternative == "less":
        return np.mean(null <= t + tol)
    m = null.mean()
    return np.mean(np.abs(null - m) >= abs(t - m) - tol)


@pytest.mark.parametrize("name", [n for n, m in M.METRICS.items() if m.has_permutation_null])
def test_permutation_p_equals_brute_force(name):
    for seed, nx, ny in ((1, 5, 5), (2, 4, 6)):
        X, Y, A, B = _small(seed, nx, ny)
        for alternative in core.ALTERNATIVES:
            res = M.metric_p(name, X, Y, A, B, alternative, rng=np.random.default_rng(0))
            assert res.method == "exact" and res.partitions == len(list(combinations(range(nx + ny), nx)))
            assert res.p == pytest.approx(brute_p(name, X, Y, A, B, alternative), abs=1e-12), (name, alternative)


@pytest.mark.parametrize("name", [n for n, m in M.METRICS.items() if m.has_permutation_null])
def test_sampled_p_near_exact_and_floored(name):
    X, Y, A, B = _small(3, 6, 6)
    exact = M.metric_p(name, X, Y, A, B, "two-sided", "exact").p
    res = M.metric_p(name, X, Y, A, B, "two-sided", "sampled", budget=4000, rng=np.random.default_rng(5))
    assert res.method == "sampled" and res.samples == 4000 and res.p >= 1 / 4000
    assert abs(res.p - exact) < 4 * np.sqrt(exact * (1 - exact) / 4000) + 2 / 4000, name


def test_metrics_without_a_null_say_why():
    X, Y, A, B = _small()
    none = [n for n, m in M.METRICS.items() if not m.has_permutation_null]
    assert sorted(none) == ["direct_bias", "mac", "ripa", "rnsb", "same"]
    for n in none:
        assert M.metric_p(n, X, Y, A, B) is None and M.METRICS[n].null_reason
    # the pooled ones really are invariant to the partition
    W = np.vstack([X, Y])
    for n in ("mac", "rnsb", "same"):
        assert M.compute(n, W[[0, 6, 2, 8, 4]], W[[5, 1, 7, 3, 9]], A, B) == pytest.approx(M.compute(n, X, Y, A, B))


# --------------------------------------------------------------------------- agreement

def _long(cells):
    cols = {"test": [], "encoder": [], "metric": [], "value": [], "p": []}
    for row in cells:
        for c, v in zip(cols, row):
            cols[c].append(v)
    return cols


def test_sign_agreement_by_hand():
    rows = _long([
        ("t1", "e", "weat", 0.8, 0.01), ("t1", "e", "ripa", 0.2, None), ("t1", "e", "rnd", 0.1, 0.02),
        ("t1", "e", "mac", 0.9, None),
        ("t2", "e", "weat", 0.5, 0.01), ("t2", "e", "ripa", -0.1, None), ("t2", "e", "rnd", 0.3, 0.40),
        ("t3", "e", "weat", -0.5, 0.30), ("t3", "e", "ect", 0.2, None),
    ])
    got = {r["test"]: r for r in M.sign_agreement(rows, alpha=0.05).iter_rows(named=True)}
    assert (got["t1"]["signs_agree"], got["t1"]["sign"], got["t1"]["n_signed"]) == (True, 1, 3)
    assert got["t1"]["decisions_agree"] is True and got["t1"]["n_significant"] == 2
    assert (got["t2"]["signs_agree"], got["t2"]["sign"], got["t2"]["decisions_agree"]) == (False, 0, False)
    assert got["t3"]["signs_agree"] is None and got["t3"]["decisions_agree"] is None and got["t3"]["sign"] == -1
    only_unsigned = M.sign_agreement(_long([("t", "e", "mac", 0.9, None), ("t", "e", "same", 0.1, None)]))
    assert only_unsigned.row(0, named=True)["sign"] is None


def test_kendall_tau_against_counting_pairs():
    rng = np.random.default_rng(4)
    a, b, c = rng.normal(size=12), rng.normal(size=12), rng.normal(size=12)
    cells = [(f"t{i}", "e", m, v[i], None) for i in range(12) for m, v in (("weat", a), ("rnd", b), ("same", c))]
    cells.append(("t99", "e", "weat", 1.0, None))   # no partner: left out of every pair
    tau = {(r["metric_a"], r["metric_b"]): r for r in M.kendall_tau_matrix(_long(cells)).iter_rows(named=True)}

    def by_counting(u, v):   # no ties: tau = (concordant - discordant) / C(n, 2)
        s = [np.sign(u[i] - u[j]) * np.sign(v[i] - v[j]) for i, j in combinations(range(len(u)), 2)]
        return sum(s) / len(s)

    assert set(tau) == {("weat", "rnd"), ("weat", "same"), ("rnd", "same")}
    assert tau["weat", "rnd"]["tau"] == pytest.approx(by_counting(a, b)) and tau["weat", "rnd"]["n"] == 12
    assert tau["rnd", "same"]["tau"] == pytest.approx(by_counting(b, c))
    by_strength = {(r["metric_a"], r["metric_b"]): r["tau"]
                   for r in M.kendall_tau_matrix(_long(cells), by_strength=True).iter_rows(named=True)}
    assert by_strength["weat", "same"] == pytest.approx(by_counting(np.abs(a), c))


def test_row_ranks_equal_rankdata_with_and_without_ties():
    from scipy.stats import rankdata

    a = np.random.default_rng(6).normal(size=(50, 9))
    a[::3, 2] = a[::3, 5]          # a tie in every third row
    a[1, :] = 0.5                  # a row of one value
    assert np.array_equal(M._ranks(a), rankdata(a, axis=1))


def test_bias_alternative_flips_only_ect():
    assert [M.bias_alternative(n) for n in ("weat", "rnd", "ect")] == ["greater", "greater", "less"]
    assert M.bias_alternative("ect", "less") == "greater" and M.bias_alternative("ect", "two-sided") == "two-sided"


def test_the_cli_lists_every_metric():
    """choices.METRIC_NAMES (what `test --help` lists, light to import) is stats.metrics.METRICS."""
    from stimkit import choices

    assert choices.METRIC_NAMES == tuple(M.METRICS)
