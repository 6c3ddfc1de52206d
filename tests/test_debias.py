"""Debiased encoders (stimkit.encoders.debias): Hard Debias against WEFE's, INLP and
SentenceDebias against figures of bias-bench's published code, and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stimkit import StimkitError, encoders
from stimkit.encoders import debias

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "bias-bench"


def _without_plotly():
    """wefe.utils imports plotly.express for its plots only; wefe is installed --no-deps beside
    stimkit (pyproject's `oracle` note), so where plotly is absent an empty module stands in."""
    import importlib.util
    import sys
    import types

    if "plotly" not in sys.modules and importlib.util.find_spec("plotly") is None:
        sys.modules.setdefault("plotly", types.ModuleType("plotly"))
        sys.modules.setdefault("plotly.express", types.ModuleType("plotly.express"))
        graph_objects = types.ModuleType("plotly.graph_objects")
        graph_objects.Figure = object  # named in a type annotation
        sys.modules.setdefault("plotly.graph_objects", graph_objects)


@pytest.fixture(scope="module")
def glove():
    return encoders.resolve("glove-6b-50d")


@pytest.fixture(scope="module")
def hard():
    return encoders.resolve("glove-6b-50d,debias=hard")


def _wefe_hard(glove, definitional, equalize, specific, words):
    """WEFE 1.0.1's HardDebias over `words` of GloVe, fitted and applied with these lists as given."""
    from gensim.models import KeyedVectors
    from wefe.debias.hard_debias import HardDebias
    from wefe.word_embedding_model import WordEmbeddingModel

    wv = glove.vectors
    kv = KeyedVectors(50)
    kv.add_vectors(words, np.asarray(wv.matrix[[wv.index[w] for w in words]], dtype=np.float32))
    model = WordEmbeddingModel(kv, "glove-6b-50d")
    hd = HardDebias(criterion_name="gender").fit(model, definitional_pairs=definitional, equalize_pairs=equalize)
    theirs = hd.transform(model, ignore=specific, copy=True)
    return np.stack([theirs[w] for w in words])


def test_hard_debias_equals_wefe(glove, hard):
    """WEFE 1.0.1's HardDebias fed Bolukbasi et al.'s lists AS PUBLISHED (case kept: "NeW",
    "Mary") gives stimkit's `debias_variant=wefe` vectors to 1e-6: both match a specific word as
    written and drop the definitional pair Mary/John that lower-case GloVe lacks. stimkit's
    default (debiaswe's equalize, Mary/John found as mary/john, the one named deviation) equals
    WEFE fed the same lists with only that pair lower-cased: on the gender lists every equalize
    word that GloVe has is specific, so equalizing before or after neutralizing is the same. WEFE
    runs over the 20,000 most frequent words and every listed word (each word is mapped on its own)."""
    pytest.importorskip("wefe")
    _without_plotly()
    wv, dim = glove.vectors, debias.load_dimension("gender")
    published = {"definitional": [list(p) for p in dim.definitional], "equalize": [list(p) for p in dim.equalize],
                 "specific": list(dim.specific)}
    assert ["Mary", "John"] in published["definitional"] and "NeW" in published["specific"]
    listed = {w for p in published["definitional"] + published["equalize"] for w in p} | set(published["specific"])
    listed = {v for w in listed for v in (w, w.lower()) if v in wv.index}
    words = list(dict.fromkeys(wv.words[:20000] + sorted(listed)))
    wefe_variant = encoders.resolve("glove-6b-50d,debias=hard,debias_variant=wefe")
    assert wefe_variant.fit["definitional"] == 9 and hard.fit["definitional"] == 10
    expected = _wefe_hard(glove, published["definitional"], published["equalize"], published["specific"], words)
    got = np.stack([wefe_variant.vectors.matrix[wefe_variant.vectors.index[w]] for w in words])
    assert np.abs(got - expected).max() < 1e-6
    folded = [[w.lower() for w in p] if p == ["Mary", "John"] else p for p in published["definitional"]]
    expected = _wefe_hard(glove, folded, published["equalize"], published["specific"], words)
    got = np.stack([hard.vectors.matrix[hard.vectors.index[w]] for w in words])
    assert np.abs(got - expected).max() < 1e-6
    # as published, "NeW" is not "new": "new" is neutralised like "doctor"; "he" is kept
    g = hard.fit["direction"]
    for w in ("doctor", "new"):
        assert abs(got[words.index(w)] @ g) < 1e-6
    assert abs(got[words.index("he")] @ g) > 0.1
    assert len(debias.specific_rows(dim, wv)) == 432  # 563 if case-folded: 131 more words kept from neutralizing


def test_equalize_reads_the_neutralised_vectors_as_debiaswe():
    """debiaswe's own debias() (run on a synthetic embedding whose equalize pairs are not
    specific; tests/fixtures/debiaswe) gives stimkit's default vectors to 1e-6; WEFE's variant,
    equalizing the original vectors, differs on those pairs and only on them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("dbw_figures", Path(__file__).parent / "fixtures" / "debiaswe" /
                                                  "make_figures.py")
    made = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(made)
    fx = json.loads((Path(__file__).parent / "fixtures" / "debiaswe" / "synthetic_debiased.json").read_text())
    assert fx["words"] == made.WORDS
    at = {w: i for i, w in enumerate(made.WORDS)}
    definitional = np.array([[at[a], at[b]] for a, b in made.DEFINITIONAL])
    equalize = np.array([[at[a], at[b]] for a, b in made.EQUALIZE])
    specific = np.array(sorted(at[w] for w in made.SPECIFIC))
    ours, g = debias.hard_debias(made.synthetic(), definitional, equalize, specific)
    theirs = np.array(fx["vectors"])
    # a pair of two neutralised words has no difference along g left, and debiaswe orients it by
    # the sign of rounding noise (stimkit: by the original vectors); up to that orientation, equal
    flipped = theirs - 2 * np.outer(theirs @ g, g)
    for rows in [np.setdiff1d(np.arange(len(theirs)), equalize.ravel()), *equalize]:
        assert min(np.abs(ours[rows] - t[rows]).max() for t in (theirs, flipped)) < 1e-6
    assert np.abs(ours - theirs).max() > 0.1  # (nurse, doctor): debiaswe's noise chose the other side
    wefe, _ = debias.hard_debias(made.synthetic(), definitional, equalize, specific, variant="wefe")
    moved = np.abs(wefe - theirs).max(axis=1) > 1e-3
    assert set(np.flatnonzero(moved)) == set(equalize.ravel())


def test_half_sibling_regression_equals_wefe(glove):
    """WEFE 1.0.1's HalfSiblingRegression (alpha 60) with the gender-specific words as its
    definitional words gives the same vectors to 1e-6 (its m x m ridge solve in float32,
    stimkit's d x d one in float64: measured 2e-7)."""
    pytest.importorskip("wefe")
    _without_plotly()
    from gensim.models import KeyedVectors
    from wefe.debias.half_sibling_regression import HalfSiblingRegression
    from wefe.word_embedding_model import WordEmbeddingModel

    enc = encoders.resolve("glove-6b-50d,debias=hsr")
    wv, dim = glove.vectors, enc.recipe.dimension
    specific = [wv.words[r] for r in debias.specific_rows(dim, wv)]
    words = list(dict.fromkeys(wv.words[:5000] + specific))
    kv = KeyedVectors(50)
    kv.add_vectors(words, np.asarray(wv.matrix[[wv.index[w] for w in words]], dtype=np.float32))
    model = WordEmbeddingModel(kv, "glove-6b-50d")
    theirs = HalfSiblingRegression(criterion_name="gender").fit(model, definitional_words=specific).transform(model)
    got = np.stack([enc.vectors.matrix[enc.vectors.index[w]] for w in words])
    expected = np.stack([theirs[w] for w in words])
    assert np.abs(got - expected).max() < 1e-6
    assert np.abs(got - np.asarray(kv.vectors)).max() > 0.1  # it moved the words


def test_fingerprint_has_method_parameters_and_lists(glove, hard):
    assert hard.spec == "glove-6b-50d,debias=hard"
    assert hard.fingerprint != glove.fingerprint
    recipe = hard.details()["identity"]["debias"]
    assert recipe["method"] == "hard" and recipe["dimension"] == "gender"
    assert set(recipe["lists"]) == {"definitional", "equalize", "specific", "direction"}
    # the same spec twice is one encoder; the display name does not count
    assert encoders.resolve("Hard=glove-6b-50d, debias=hard").fingerprint == hard.fingerprint


def test_fingerprint_follows_the_lists_and_parameters(tmp_path):
    """A list's content decides: the same lists in another folder are the same encoder, one more
    specific word is another; so is another parameter value."""
    pairs = json.dumps([["woman", "man"], ["she", "he"], ["mother", "father"]])
    made = {}
    for folder, specific in (("a", ["he", "she"]), ("b", ["he", "she"]), ("c", ["he", "she", "her"])):
        (tmp_path / folder).mkdir()
        path = tmp_path / folder / "mine.toml"
        path.write_text(f"definitional = {pairs}\nspecific = {json.dumps(specific)}\n", encoding="utf-8")
        made[folder] = encoders.resolve(f"glove-6b-50d,debias=hard:{path}").fingerprint
    assert made["a"] == made["b"] != made["c"]
    assert (encoders.resolve("glove-6b-50d,debias=hsr").fingerprint
            != encoders.resolve("glove-6b-50d,debias=hsr,debias_alpha=10").fingerprint)
    with pytest.raises(StimkitError, match="debias_words is no option of debias=hard"):
        encoders.resolve("glove-6b-50d,debias=hard,debias_words=10")
    with pytest.raises(StimkitError, match="debias_recipe must be one of ravfogel, scaled, stopping"):
        encoders.resolve("glove-6b-50d,debias=inlp,debias_recipe=mine")
    # a recipe by name is the spec's, its values are not repeated; an option given overrides it
    assert (encoders.resolve("glove-6b-50d,debias=inlp,debias_recipe=stopping,debias_tol=0.1").spec
            == "glove-6b-50d,debias=inlp,debias_recipe=stopping,debias_tol=0.1")


def _fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_inlp_matches_bias_bench(glove):
    """bias-bench's INLP (get_debiasing_projection with its LinearSVC parameters and its data
    split), run on the GloVe words stimkit's INLP draws, gives the projection stimkit computes."""
    fx = _fixture("inlp_glove-6b-50d.json")
    wv = glove.vectors
    x = np.concatenate([np.asarray(wv.matrix[[wv.index[w] for w in fx["words"][k]]], dtype=np.float32)
                        for k in ("first", "second", "neutral")])
    n = len(fx["words"]["first"])
    y = np.concatenate([np.ones(n, int), np.zeros(n, int), -np.ones(n, int)])
    x_train, x_dev, _, y_train, y_dev, _ = debias.split(x, y)
    fit = debias.inlp(x_train, y_train, x_dev, y_dev, fx["classifiers"])
    expected = np.array(fx["projection"])
    assert np.abs(fit.projection - expected).max() < 1e-6
    # the encoder with stimkit's first recipe (now by name): it stops at the first classifier within
    # 0.05 of chance, and maps every vector by its projection. (Its words are no longer the
    # fixture's: the specific list, matched as published, now leaves 131 more candidates in.)
    enc = encoders.resolve(fx["encoder"] + ",debias_recipe=stopping")
    acc, chance = enc.fit["accuracies"], enc.fit["chance"]
    assert acc[-1] <= chance + 0.05 < min(acc[:-1]) and enc.fit["removed"] == len(acc) - 1
    probe = ["doctor", "nurse", "engineer", "he", "she"]
    got = enc.encode(probe, [None] * 5).vectors
    base = glove.encode(probe, [None] * 5).vectors
    assert np.abs(got - base @ enc.fit["projection"].T).max() < 1e-5


NP_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nullspace-projection"


def test_inlp_matches_ravfogel_code(glove):
    """Ravfogel et al.'s own INLP code (their notebook's selection, split and
    get_debiasing_projection, run on GloVe 50d: tests/fixtures/nullspace-projection) picks the
    same 7500 words a side as stimkit and gives stimkit's projection: to 1e-6 for stimkit's
    default (6 classifiers: rank 32 of 50 left), to 0.05 and in rank for their recipe (35
    classifiers: rank 5 left; the later classifiers fit noise). The
    checks never score a word INLP trained on."""
    from stimkit.run import debias as run_debias

    fx = json.loads((NP_FIXTURES / "inlp_glove-6b-50d.json").read_text())
    for spec, want in fx.items():
        enc = encoders.resolve(spec)
        assert want["same_masc_words"] and want["same_fem_words"]
        assert enc.fit["removed"] == want["classifiers"] == {"ravfogel": 35}.get(enc.recipe.params["recipe"], 6)
        p = enc.fit["projection"]
        # 6 classifiers: equal to 4e-8. 35: from the 15th on the vectors left are at chance, each
        # classifier fits rounding noise and the two codes' operation orders part (measured 0.019)
        tol = 1e-6 if want["classifiers"] == 6 else 0.05
        assert np.abs(p - np.array(want["projection"])).max() < tol
        assert np.linalg.matrix_rank(p) == want["rank"]
        labels = enc.fit["labels"]
        assert [np.sum(labels == c) for c in (1, 0, -1)] == [7500] * 3
        candidates, _ = run_debias.gg_words(enc)
        assert not np.isin(candidates, enc.fit["trained"]).any() and np.isin(enc.fit["trained"], enc.fit["rows"]).all()
    assert fx["glove-6b-50d,debias=inlp"]["after_rbf_dev"] > 0.75  # their held-out RBF SVM still finds gender


def test_sentence_debias_matches_bias_bench():
    """bias-bench's compute_gender_subspace (the mean-pooled MiniLM of each counterfactual
    sentence, normalised, minus its pair's mean, first principal direction), on the pairs
    stimkit renders from its templates, is stimkit's SentenceDebias direction (up to sign)."""
    fx = _fixture("sentencedebias_minilm.json")
    enc = encoders.resolve(fx["encoder"])
    assert [[a, b] for a, b, _ in enc.pairs] == fx["pairs"]
    ours, theirs = enc.subspace[0], np.array(fx["direction"])
    assert np.abs(ours - np.sign(ours @ theirs) * theirs).max() < 1e-4
    # the projection removes it: no debiased vector has a component along it
    out = enc.encode(["The nurse is here.", "He is a doctor."], [None, None]).vectors
    assert np.abs(out @ theirs).max() < 1e-4


# ------------------------------------------------------------------ bad input: one line, non-zero, nothing stored

@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    import stimkit

    path = tmp_path_factory.mktemp("debias") / "store.duckdb"
    with stimkit.open(path) as s:
        s.generate(["math", "arts", "male_terms", "female_terms"], ["word"])
        s.test(["weat7"], encoders=["glove-6b-50d"], budget=1000)
    return path


def _dimension(tmp_path, pairs) -> str:
    path = tmp_path / "mine.toml"
    path.write_text("definitional = " + json.dumps(pairs) + "\n", encoding="utf-8")
    return str(path)


BAD = {
    "definitional word the vocabulary lacks": (lambda t: f"glove-6b-50d,debias=hard:{_dimension(t, [['woman', 'man'], ['zzqxvw', 'he']])}",
                                               "the vocabulary has no word 'zzqxvw'"),
    "a dimension of one pair": (lambda t: f"glove-6b-50d,debias=hard:{_dimension(t, [['woman', 'man']])}",
                                "has 1 pair; a direction needs at least 2 pairs"),
    "INLP that does not converge": (lambda t: "glove-6b-50d,debias=inlp,debias_iterations=1,debias_tol=0.05",
                                    "INLP did not converge"),
    "an encoder without stored word vectors": (lambda t: "minilm,debias=hard", "has none"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_stores_nothing(case, small_store, tmp_path):
    import duckdb
    from typer.testing import CliRunner

    from conftest import snapshot
    from stimkit.cli import app

    spec, message = BAD[case][0](tmp_path), BAD[case][1]

    def digest():
        con = duckdb.connect(str(small_store), read_only=True)
        try:
            return snapshot(con)
        finally:
            con.close()

    before = digest()
    for args in (["test", "weat7", "-e", spec], ["debias", "compare", "weat7", "-e", spec], ["debias", "check", "-e", spec]):
        r = CliRunner().invoke(app, ["--db", str(small_store), *args])
        lines = r.output.strip().splitlines()
        # `error: ...`, or the runner's `failed: test ..., encoder ...: ...` when the plan refuses the encoder
        assert r.exit_code != 0 and len(lines) == 1 and lines[0].startswith(("error: ", "failed: ")), (args, r.output)
        assert message in r.output and "internal error" not in r.output, r.output
    assert digest() == before


# ------------------------------------------------------------------ the checks' statistics

def test_recover_statistics_by_hand_and_by_other_libraries():
    from statsmodels.stats.proportion import proportion_confint

    from stimkit.stats import recover

    # chance of k-means' better labelling: n = 2 by hand (K = 0, 1, 2 with 1/4, 1/2, 1/4)
    assert recover.chance_cluster_accuracy(2) == pytest.approx(0.25 * 1 + 0.5 * 0.5 + 0.25 * 1)
    assert recover.chance_cluster_accuracy(1000) == pytest.approx(0.5 + np.sqrt(1 / (2 * np.pi * 1000)), abs=1e-3)
    assert recover.clopper_pearson(37, 50) == pytest.approx(proportion_confint(37, 50, method="beta"))
    # neighbours by brute force: 1-D points, cosine neighbours in 2-D
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2))
    bias = rng.normal(size=60)
    items, pool = np.arange(20), np.arange(60)
    fig = recover.neighbour_correlation(x, bias, items, pool, k=5)
    xu = x / np.linalg.norm(x, axis=1, keepdims=True)
    means = []
    for i in items:
        sims = xu @ xu[i]
        sims[i] = -np.inf
        means.append(bias[np.argsort(-sims)[:5]].mean())
    assert fig.value == pytest.approx(np.corrcoef(bias[items], means)[0, 1])
    assert fig.low < fig.value < fig.high and fig.chance == 0
    # a map that keeps every vector keeps every neighbour; a random one keeps about chance
    assert recover.neighbour_overlap(x, x * 3, k=5).value == 1.0
    shuffled = recover.neighbour_overlap(x, rng.normal(size=(60, 2)), k=5)
    assert shuffled.low < shuffled.chance + 0.1 and shuffled.value < 0.5
    # separable sides cluster and classify perfectly; the same points with shuffled labels near chance
    sides = np.r_[np.ones(100, int), np.zeros(100, int)]
    pts = np.r_[rng.normal(size=(100, 5)) + 5, rng.normal(size=(100, 5)) - 5]
    assert recover.cluster_accuracy(pts, sides, resamples=20).value == 1.0
    assert recover.classifier_accuracy(pts, sides, train=100).value == 1.0
    assert recover.classifier_accuracy(pts, rng.permutation(sides), train=100).low < 0.6
    split = recover.split_classifier_accuracy(pts[::2], sides[::2], pts[1::2], sides[1::2])
    assert (split.value, split.chance, split.n) == (1.0, 0.5, 100)
    # Gonen & Goldberg's neighbours by brute force: the share of the 5 nearest with bias above 0
    fig = recover.neighbour_share_correlation(x, bias, items, pool, k=5)
    shares = []
    for i in items:
        sims = xu @ xu[i]
        sims[i] = -np.inf
        shares.append(np.mean(bias[np.argsort(-sims)[:5]] > 0))
    assert fig.value == pytest.approx(np.corrcoef(bias[items], shares)[0, 1])
    # the RBF classifier: 20 of each side trained on, by scikit-learn's SVC(gamma='auto') directly
    from sklearn.svm import SVC

    ring = np.r_[rng.normal(size=(100, 2)) * 0.3, rng.normal(size=(100, 2)) * 3]  # not linearly separable
    tr, te = recover.balanced_split(sides, 20, seed=4)
    assert sorted(np.bincount(sides[tr])) == [20, 20] and len(np.intersect1d(tr, te)) == 0 and len(te) == 160
    unit = recover.unit(ring + 0.01)
    want = SVC(gamma="auto").fit(unit[tr], sides[tr]).score(unit[te], sides[te])
    got = recover.classifier_accuracy(ring + 0.01, sides, 20, seed=4, kernel="rbf", balanced=True)
    assert got.value == pytest.approx(want) and got.n == 160


DHD_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "double-hard-debias"


def test_checks_on_glove_hard_debias(hard):
    """Gonen & Goldberg's checks, as Double-Hard Debias's copy of their functions computes them on
    the same words and vectors (tests/fixtures/double-hard-debias): k-means equal to its figure
    with n_init 10 (scikit-learn's default when they ran; one initialisation gives 0.892-0.910
    over seeds 0-9), the RBF classifier's accuracy and the neighbours' r to 1e-6. The finding
    reproduces on GloVe 50d: after Hard Debias the most biased words still cluster (>= 0.85) and an
    RBF SVM still recovers gender from held-out words (>= 0.85). Word similarity is the same as
    gensim's own evaluation of the base vectors."""
    from gensim.models import KeyedVectors
    from gensim.test.utils import datapath

    from stimkit.run import debias as run_debias

    fx = json.loads((DHD_FIXTURES / "gonen_goldberg_glove-6b-50d.json").read_text())[hard.spec]
    # their limit_vocab, the dimension's lists excluded, gives the words stimkit's check reads
    assert fx["same_words_as_limit_vocab"] and fx["words"] == len(run_debias.gg_words(hard)[0])
    rows = {r.check: r for r in run_debias.checks(hard, n=500, resamples=20)}
    c, k, nb = rows["clustering"], rows["classifier (rbf)"], rows["neighbours"]
    assert (c.before, c.after) == (fx["clustering_n_init10_before"], fx["clustering_n_init10_after"])
    assert min(fx["clustering_seeds0-9_after"]) <= c.after <= max(fx["clustering_seeds0-9_after"])
    assert k.before == pytest.approx(fx["classifier_rbf_before"], abs=1e-6)
    assert k.after == pytest.approx(fx["classifier_rbf_after"], abs=1e-6)
    assert nb.before == pytest.approx(fx["neighbours_before"], abs=1e-6)
    assert nb.after == pytest.approx(fx["neighbours_after"], abs=1e-6)
    assert c.after >= 0.85 and k.after >= 0.85 and c.chance < c.after_low and k.after_low > k.chance + 0.3
    assert all(r.protocol == "gonen-goldberg" for r in (c, k, nb)) and "cos(w, he) - cos(w, she)" in c.items
    assert rows["classifier (linear)"].after > 0.85
    base = hard.base.vectors
    kv = KeyedVectors(50)
    kv.add_vectors(base.words, np.asarray(base.matrix))
    for name, file in run_debias.SIMILARITY_SETS.items():
        pearson, spearman, oov = kv.evaluate_word_pairs(datapath(file), restrict_vocab=len(base.words))
        assert rows[name].before == pytest.approx(spearman.statistic, abs=1e-9) and oov == 0
        assert rows[name].before_low < rows[name].before < rows[name].before_high
    # stimkit's first protocol, kept by name: words ranked on the direction Hard Debias removed,
    # which hides most of what the words ranked by he - she show
    old = {r.check: r for r in run_debias.projection_checks(hard, 500, 0, 10, 50000)}
    assert set(old) == {"clustering", "classifier (linear)", "neighbours"}
    assert old["clustering"].protocol == "projection" and old["clustering"].after < 0.7 < c.after


def test_compare_table_and_figure(small_store, tmp_path):
    """debias compare: the base's and the debiased encoder's rows per test; the change is the
    difference of the two stored d, its paired interval around it; the figure is written."""
    import stimkit

    with stimkit.open(small_store) as s:
        report, rows = s.debias_compare(["weat7"], ["glove-6b-50d,debias=hard"], budget=1000)
    by = {r.encoder: r for r in rows}
    base, after = by["glove-6b-50d"], by["glove-6b-50d,debias=hard"]
    assert base.change is None and after.change == pytest.approx(after.d - base.d, abs=1e-9)
    assert after.change_low < after.change < after.change_high and 0 <= after.change_p <= 1
    # the report finds the same pairs among the stored results, and draws them
    from stimkit.analysis.debias import stored_before_after
    from stimkit.report import build, data

    with stimkit.open(small_store) as s:
        # stored apart from the tests' results (kind 'debias': in no family), read with --kind debias
        assert s.results().height == 1
        found = {(r.test, r.encoder): r for r in stored_before_after(s.con, s.results(kind="debias"))}
        assert found[("weat7", "glove-6b-50d,debias=hard")].change == pytest.approx(after.change)
        written = build.write_report(data.gather(s.con), tmp_path / "report", ["html"])
    assert "Before and after debiasing" in written.html.read_text()


def test_compare_command_prints_the_table(small_store, tmp_path):
    import csv
    import io

    from typer.testing import CliRunner

    from stimkit.cli import app

    r = CliRunner().invoke(app, ["--db", str(small_store), "debias", "compare", "weat7", "-e", "glove-6b-50d,debias=hard",
                                 "--seed", "3", "--format", "csv", "--figure", str(tmp_path / "f.svg")])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["encoder"] for row in rows] == ["glove-6b-50d", "glove-6b-50d,debias=hard"]
    assert float(rows[1]["change"]) == pytest.approx(float(rows[1]["d"]) - float(rows[0]["d"]))
    assert (tmp_path / "f.svg").exists()


def test_inlp_over_sentences():
    """INLP of a sentence encoder, over its counterfactual sentence pairs: the map is an
    orthogonal projection, the classifiers it trained are in its null space, and it stopped at
    the first one whose held-out accuracy was within debias_tol of chance. (A loose tol keeps
    the test short: the default, 0.05, takes MiniLM 34 classifiers.)"""
    enc = encoders.resolve("minilm,debias=inlp,debias_tol=0.3")
    p = enc.matrix
    assert np.allclose(p, p.T, atol=1e-8) and np.allclose(p @ p, p, atol=1e-8)
    assert 0 < enc.fit["removed"] < 384 and round(np.trace(p)) == 384 - np.linalg.matrix_rank(np.eye(384) - p)
    acc, chance = enc.fit["accuracies"], enc.fit["chance"]
    assert acc[-1] <= chance + 0.3 and all(a > chance + 0.3 for a in acc[:-1]) and len(acc) == enc.fit["removed"] + 1
    # its vectors: the base's through the projection
    base = enc.base.encode(["He is a doctor."], [None]).vectors
    assert np.abs(enc.encode(["He is a doctor."], [None]).vectors - base @ p.T).max() < 1e-5


def test_check_command_names_its_protocol(tmp_path):
    """debias check prints each row's protocol; --protocol projection gives stimkit's first
    rule's rows; an unknown protocol is a usage error in one line (exit 2)."""
    import csv
    import io

    from typer.testing import CliRunner

    from stimkit.cli import app

    db = str(tmp_path / "s.duckdb")
    args = ["--db", db, "debias", "check", "-e", "glove-6b-50d,debias=hard", "--n", "50", "--resamples", "10",
            "--format", "csv"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    rows = {row["check"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    assert {rows[c]["protocol"] for c in ("clustering", "classifier (rbf)", "classifier (linear)", "neighbours")} == {
        "gonen-goldberg"}
    assert "RBF SVM" in rows["classifier (rbf)"]["items"] and "cos(w, he) - cos(w, she)" in rows["clustering"]["items"]
    r = CliRunner().invoke(app, args + ["--protocol", "projection"])
    rows = {row["check"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    assert r.exit_code == 0 and rows["clustering"]["protocol"] == "projection" and "classifier (rbf)" not in rows
    r = CliRunner().invoke(app, args + ["--protocol", "mine"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "gonen-goldberg" in r.output
