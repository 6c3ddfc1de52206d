"""WEFAT: statistics against hand computations and brute force, the property tables, the store and the CLI."""

import dataclasses
import importlib.util
import json
from itertools import combinations
from math import comb
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from stimkit import StimkitError, encoders, store
from stimkit.stimuli import properties, wordlists
from stimkit.catalog import wefat as wefat_defs
from stimkit.encoders import embeddings
from stimkit.run import plan
from stimkit.run.execute import execute
from stimkit.run.options import Options, WefatOptions
from stimkit.stats import wefat
from stimkit.cli import app

from conftest import FIXTURES, REPO, snapshot

WEFAT_REF = FIXTURES / "wefat"


# --------------------------------------------------------------------------- statistics

def test_association_equals_hand_computation_on_3d_vectors():
    w = np.array([[1.0, 0.0, 0.0]])
    A = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])           # cos 1/sqrt2, 0
    B = np.array([[0.0, 0.0, 2.0], [-1.0, 0.0, 0.0], [3.0, 0.0, 4.0]])  # cos 0, -1, 3/5
    cos = [1 / np.sqrt(2), 0.0, 0.0, -1.0, 0.6]
    mean_a, mean_b = (1 / np.sqrt(2)) / 2, (0.0 - 1.0 + 0.6) / 3
    m = sum(cos) / 5
    std = np.sqrt(sum((c - m) ** 2 for c in cos) / 4)          # sample std (ddof = 1) over A u B
    assert wefat.association(w, A, B)[0] == pytest.approx((mean_a - mean_b) / std, rel=1e-12)
    # the population std gives another number: the ddof is not a no-op
    assert wefat.association(w, A, B, ddof=0)[0] == pytest.approx((mean_a - mean_b) / np.std(cos), rel=1e-12)


def test_sentence_context_is_the_mean_over_the_words_sentences():
    rng = np.random.default_rng(1)
    T, A, B = rng.normal(size=(5, 4)), rng.normal(size=(3, 4)), rng.normal(size=(4, 4))
    word_of = np.array([0, 0, 1, 1, 1])
    per_sentence = wefat.association(T, A, B)
    s = wefat.association_of(wefat.normalized_cosines(T, A, B, word_of), len(A))
    np.testing.assert_allclose(s, [per_sentence[:2].mean(), per_sentence[2:].mean()], rtol=1e-12)


def test_regression_agrees_with_scipy_pearsonr_and_hand_formulas():
    rng = np.random.default_rng(7)
    s = rng.normal(size=20)
    p = 30 + 12 * s + rng.normal(scale=8, size=20)
    out = wefat.regression(s, p)
    ref = sps.pearsonr(s, p)
    assert out["r"] == pytest.approx(ref.statistic, rel=1e-12)
    assert out["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    # by hand: r, its t statistic with n - 2 df, and the least-squares line with a t CI
    n, sx, sy = len(s), s - s.mean(), p - p.mean()
    r = (sx * sy).sum() / np.sqrt((sx ** 2).sum() * (sy ** 2).sum())
    t = r * np.sqrt((n - 2) / (1 - r * r))
    assert out["p_value"] == pytest.approx(2 * sps.t.sf(abs(t), n - 2), rel=1e-9)
    slope = (sx * sy).sum() / (sx ** 2).sum()
    intercept = p.mean() - slope * s.mean()
    resid = p - intercept - slope * s
    se = np.sqrt((resid ** 2).sum() / (n - 2) / (sx ** 2).sum())
    q = sps.t.ppf(0.975, n - 2)
    assert (out["slope"], out["intercept"]) == pytest.approx((slope, intercept), rel=1e-10)
    assert (out["slope_ci_low"], out["slope_ci_high"]) == pytest.approx((slope - q * se, slope + q * se), rel=1e-10)
    assert out["rho"] == pytest.approx(sps.spearmanr(s, p).statistic, rel=1e-12)


def brute_force_word_p(w, A, B):
    """Pr[s(w, A_i, B_i) >= s(w, A, B)] over every split of A u B into |A| and |B|, with the full formula."""
    X = np.concatenate([A, B])
    observed = wefat.association(w[None], A, B)[0]
    hits = total = 0
    for idx in combinations(range(len(X)), len(A)):
        rest = [i for i in range(len(X)) if i not in idx]
        hits += wefat.association(w[None], X[list(idx)], X[rest])[0] >= observed - 1e-12
        total += 1
    return hits / total


@pytest.mark.parametrize("na, nb", [(4, 4), (3, 5)])
def test_word_p_equals_brute_force_enumeration(na, nb):
    rng = np.random.default_rng(na * 10 + nb)
    W, A, B = rng.normal(size=(6, 5)), rng.normal(size=(na, 5)), rng.normal(size=(nb, 5))
    v = wefat.normalized_cosines(W, A, B)
    got = wefat.word_p_values(v, na, [np.random.default_rng(0)] * len(W))
    expected = [brute_force_word_p(w, A, B) for w in W]
    assert [g.p for g in got] == pytest.approx(expected, abs=1e-12)
    assert all(g.method == "exact" and g.samples == comb(na + nb, na) for g in got)
    assert min(expected) < 0.5 < max(expected)  # words on both sides: not a constant p


def test_sentence_word_p_moves_whole_attribute_words():
    """Sentence context: brute force over splits of the attribute *words*, s(w) the mean over sentences."""
    rng = np.random.default_rng(3)
    T = rng.normal(size=(3, 4))                     # one target word, three sentences
    attr = rng.normal(size=(8, 4))                  # four attribute words, two sentences each
    groups = np.repeat(np.arange(4), 2)             # words 0, 1 in A; 2, 3 in B
    v = wefat.normalized_cosines(T, attr[:4], attr[4:], np.zeros(3, dtype=int))
    got = wefat.word_p_values(v, 4, [np.random.default_rng(0)], attr_groups=groups, n_groups_a=2)[0]

    def s_of(a_words):
        a = [i for i in range(8) if groups[i] in a_words]
        b = [i for i in range(8) if groups[i] not in a_words]
        return wefat.association(T, attr[a], attr[b]).mean()

    observed = s_of({0, 1})
    splits = [set(c) for c in combinations(range(4), 2)]
    assert got.p == pytest.approx(np.mean([s_of(c) >= observed - 1e-12 for c in splits]), abs=1e-12)


def test_bootstrap_r_is_seeded_and_brackets_r():
    rng = np.random.default_rng(5)
    s = rng.normal(size=30)
    p = s + rng.normal(scale=0.5, size=30)
    lo, hi = wefat.bootstrap_r(s, p, 2000, np.random.default_rng(1))
    assert lo < sps.pearsonr(s, p).statistic < hi
    assert (lo, hi) == wefat.bootstrap_r(s, p, 2000, np.random.default_rng(1))


def test_least_typical_drops_the_farthest_from_the_centroid():
    W = np.array([[1.0, 0.0], [0.9, 0.1], [1.0, 0.05], [0.0, 1.0], [1.0, -0.3]])
    assert wefat.least_typical(W, 0.2).tolist() == [3]          # round(0.2 * 5) = 1: the odd one out
    assert wefat.least_typical(W, 0.4).tolist() == [3, 4]
    assert wefat.least_typical(W, 0.0).tolist() == []
    with pytest.raises(StimkitError):
        wefat.least_typical(W, 1.0)


# --------------------------------------------------------------------------- property tables

def load_derive_script():
    spec = importlib.util.spec_from_file_location("derive_properties", REPO / "scripts" / "derive_properties.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bls_aggregation_for_engineer_equals_a_hand_sum():
    derive = load_derive_script()
    rows = derive.read_tsv(WEFAT_REF / "professionsBLS2015.tsv")
    # the twelve BLS rows labelled "engineer": (total employed, percent women)
    engineer = [(357, 1.9), (81, 3.4), (50, 3.5), (323, 8.3), (140, 9.4), (138, 11.3),
                (302, 12.5), (360, 12.6), (72, 12.8), (440, 13.6), (84, 14.7), (214, 20.2)]
    hand = sum(e * w for e, w in engineer) / sum(e for e, _ in engineer)
    assert derive.bls_percent_women(rows, "engineer") == pytest.approx(hand, rel=1e-12)
    assert properties.load("bls2015_percent_women").get("engineer") == pytest.approx(hand, abs=5e-5)  # committed, 4 decimals


def test_committed_tables_match_the_references():
    derive = load_derive_script()
    census = derive.census_percent_female(derive.read_tsv(WEFAT_REF / "censusNames1990.tsv"))
    table = properties.load("census1990_percent_female")
    assert table.get("WILLIE") == pytest.approx(50 * (1 - 0.5138), abs=5e-5) == pytest.approx(census["Willie"], abs=5e-5)
    names = wordlists.load_all()["androgynous_names"].words
    assert all(table.get(w.text) is not None for w in names)
    bls = properties.load("bls2015_percent_women")
    assert len(bls.values) == 50 and bls.unit == "percent"


def test_non_numeric_property_is_one_line_naming_file_and_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("# a comment\nword,value,unit,source\nnurse,90.1,percent,x\nengineer,lots,percent,x\n")
    with pytest.raises(StimkitError) as e:
        properties.parse_file(path)
    assert str(e.value) == f"{path}:4: value 'lots' of word 'engineer' is not a number"
    path.write_text("word,value\nnurse,1\nNurse,2\n")
    with pytest.raises(StimkitError, match=r"bad.csv:3: duplicate word 'Nurse'"):
        properties.parse_file(path)


# --------------------------------------------------------------------------- the store and the CLI

@pytest.fixture
def con(catalog_con):
    """A private copy of the catalog store (conftest), which holds every word list under word and may2019."""
    return catalog_con


@pytest.fixture(scope="module")
def glove():
    return encoders.resolve("glove-6b-50d")


def run_wefats(con, tests, enc, opts=WefatOptions(), command=None):
    """WEFATs on one encoder in one run: planned, encoded, executed; a refusal or failure raises."""
    planned = plan.make(con, [], [enc.spec], Options(budget=opts.budget, seed=opts.seed), wefats=list(tests),
                        wefat_options=opts)
    if planned.refused:
        raise planned.refused[0].as_error()
    for e, stimuli in planned.encodings:
        embeddings.encode_missing(con, e, stimuli)
    report = execute(con, planned, command or f"wefat {tests[0].name}")
    if report.failures:
        raise report.failures[0].as_error()
    return report


def run_wefat(con, test, enc, opts=WefatOptions()):
    """One WEFAT on one encoder in a run of its own: the stored WefatResult with its items."""
    (res,) = run_wefats(con, [test], enc, opts).wefats
    return res


def test_stored_result_matches_the_library_and_traces_back(con, glove):
    row = run_wefat(con, wefat_defs.get("wefat-occupations"), glove, WefatOptions(seed=2))
    assert row.n == 50 and row.dropped_words == []
    stored = store.frame(con, "SELECT * FROM wefat_results")
    items = store.frame(con, "SELECT * FROM wefat_items ORDER BY ordinal")
    assert stored.height == 1 and items.height == 50
    assert stored["r"][0] == row.r and stored["property_version"][0] == properties.load("bls2015_percent_women").version
    assert store.one(con, "SELECT count(*) FROM property_values WHERE version = ?", [row.property_version])[0] == 50
    # recompute from the encoder directly: s(w) per word and r
    words = [w.text for w in wordlists.load_all()["occupations"].words]
    vec = lambda ws: glove.encode(ws, [None] * len(ws)).vectors  # noqa: E731
    s = wefat.association(vec(words), vec(["female", "woman", "girl", "sister", "she", "her", "hers", "daughter"]),
                          vec(["male", "man", "boy", "brother", "he", "him", "his", "son"]))
    np.testing.assert_allclose(items["association"].to_numpy(), s, rtol=1e-5)
    prop = items["property"].to_numpy()
    assert row.r == pytest.approx(sps.pearsonr(s, prop).statistic, rel=1e-5)
    assert row.r > 0.5  # the paper's finding holds on GloVe 6B too: female-leaning words, more women
    current = store.frame(con, "SELECT name, version FROM current_sets WHERE name IN "
                          "('occupations@word', 'female_terms@word', 'male_terms@word')")
    assert sorted(stored["set_versions"][0]) == sorted(current["version"])
    assert items["set_version"].unique().to_list() == current.filter(current["name"] == "occupations@word")["version"].to_list()


def test_missing_property_drops_the_word_by_name(con, glove, tmp_path):
    table = properties.load("bls2015_percent_women")
    path = tmp_path / "women_no_nurse.csv"
    path.write_text("word,value,unit,source\n" + "".join(
        f"{table.words[k]},{v},percent,test\n" for k, v in table.values.items() if k != "nurse"))
    test = wefat_defs.WefatDef("no-nurse", "occupations", "female_terms", "male_terms", str(path), source="adhoc")
    row = run_wefat(con, test, glove)
    assert row.n == 49 and row.dropped_words == ["nurse"]
    assert store.one(con, "SELECT dropped, association FROM wefat_items WHERE word = 'nurse'") == ("no property", None)


def results_tables(con):
    return {t: store.rows(con, f"SELECT * FROM {t} ORDER BY ALL")
            for t in ("runs", "wefat_results", "wefat_items", "property_tables", "property_values")}


def test_fewer_than_three_words_with_a_property_is_refused_and_stores_nothing(con, glove):
    before = results_tables(con)
    sql = "SELECT 'nurse' AS word, 90.0 AS value UNION ALL SELECT 'engineer', 10.0"
    test = wefat_defs.WefatDef("two", "occupations", "female_terms", "male_terms", sql, source="adhoc")
    with pytest.raises(StimkitError, match="only 2 target word"):
        run_wefat(con, test, glove)
    assert results_tables(con) == before


def test_unequal_attribute_sizes_and_least_typical_filter(con, glove):
    b5 = "SELECT * FROM current_stimuli WHERE set_name = 'male_terms@word' AND ordinal < 5"
    test = wefat_defs.WefatDef("names", "androgynous_names", "female_terms", b5, "census1990_percent_female", source="adhoc")
    row = run_wefat(con, test, glove, WefatOptions(drop_least_typical=0.2))
    assert (row.n_a, row.n_b, row.n) == (8, 5, 40)
    assert row.word_p_method == "exact" and len(row.dropped_words) == 10
    dropped = {it.word for it in row.items if it.dropped == "least typical"}
    assert dropped == set(row.dropped_words)
    # the dropped ten are the farthest from the centroid of all fifty
    words = [w.text for w in wordlists.load_all()["androgynous_names"].words]
    far = wefat.least_typical(glove.encode(words, [None] * 50).vectors.astype(float), 0.2)
    assert dropped == {words[i] for i in far}


def test_sentence_context_through_templates(con, glove):
    test = wefat_defs.get("wefat-names")
    row = run_wefat(con, dataclasses.replace(test, context="sentence"), glove)
    assert row.context == "sentence" and "androgynous_names@may2019" in row.targets_sql
    assert row.word_p_method == "exact-clustered"   # whole attribute words move: C(16, 8) splits
    # s(w) is the mean of the per-sentence scores against every attribute sentence
    frame = lambda name: store.frame(con, f"SELECT * FROM current_stimuli WHERE set_name = '{name}' ORDER BY ordinal")  # noqa: E731
    vec = lambda f: glove.encode(f["stimulus"].to_list(), [None] * f.height).vectors.astype(float)  # noqa: E731
    kelly_sentences = frame("androgynous_names@may2019").filter(word="Kelly")
    s = wefat.association(vec(kelly_sentences), vec(frame("female_terms@may2019")), vec(frame("male_terms@may2019")))
    kelly = next(it for it in row.items if it.word == "Kelly")
    assert kelly.n_stimuli == kelly_sentences.height == len(kelly.template_ids) > 1
    assert kelly.association == pytest.approx(s.mean(), rel=1e-5)


cli = CliRunner()


def test_cli_json_is_one_document_with_summary_and_words(con, glove):
    db = con.execute("PRAGMA database_list").fetchall()[0][2]
    con.close()
    r = cli.invoke(app, ["--db", db, "wefat", "wefat-names", "-e", "glove-6b-50d", "--format", "json", "--bootstrap", "500"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert {"r", "p_value", "n", "rho", "slope", "r_ci_low"} <= set(doc["summary"]) and doc["summary"]["n"] == 50
    assert doc["summary"]["r_ci_low"] < doc["summary"]["r"] < doc["summary"]["r_ci_high"]
    assert len(doc["words"]) == 50 and {"word", "association", "property"} <= set(doc["words"][0])
    r = cli.invoke(app, ["--db", db, "wefat-results", "--format", "csv"])
    assert r.exit_code == 0 and r.stdout.count("\n") == 2 and "wefat-names" in r.stdout


def test_cli_bad_property_file_is_one_line_and_help_says_sizes_may_differ(con, tmp_path):
    db = con.execute("PRAGMA database_list").fetchall()[0][2]
    before = snapshot(con)
    con.close()
    bad = tmp_path / "bad.csv"
    bad.write_text("word,value\nnurse,ninety\n")
    r = cli.invoke(app, ["--db", db, "wefat", "--targets", "occupations", "--a", "female_terms", "--b", "male_terms",
                         "--property", str(bad), "--name", "bad"])
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f"error: {bad}:2: value 'ninety' of word 'nurse' is not a number"]
    after = store.connect(db)
    assert snapshot(after) == before
    after.close()
    help_text = cli.invoke(app, ["wefat", "--help"], env={"COLUMNS": "300"}).output
    assert "A and B may differ in size" in " ".join(help_text.split())


def test_run_catalog_runs_both_entries_under_one_run(con, glove):
    report = run_wefats(con, list(wefat_defs.load_catalog().values()), glove, WefatOptions(budget=5000), "run")
    run_id = report.run_id
    assert [r.name for r in report.wefats] == ["wefat-occupations", "wefat-names"]
    assert store.rows(con, "SELECT DISTINCT run_id FROM wefat_results") == [(run_id,)]
    again = run_wefats(con, list(wefat_defs.load_catalog().values()), glove, WefatOptions(budget=5000), "run")
    assert again.run_id != run_id
    # a property table version is stored once, however often it is used
    assert store.rows(con, "SELECT name, count(*) FROM property_tables GROUP BY name ORDER BY name") == [
        ("bls2015_percent_women", 1), ("census1990_percent_female", 1)]


def test_contextual_word_context_reads_the_words_span(con):
    """c-word: a token-pooling encoder embeds the target word inside each of its sentences."""
    enc = encoders.resolve("minilm,pooling=token")
    first = "SELECT * FROM current_stimuli WHERE set_name = '{}@may2019' AND word_ordinal < {}"
    test = wefat_defs.WefatDef("cword", first.format("occupations", 5), first.format("female_terms", 4),
                          first.format("male_terms", 4), "bls2015_percent_women", context="sentence")
    row = run_wefat(con, test, enc, WefatOptions(budget=50))
    assert row.context == "token" and row.n == 5
    assert [it.word for it in row.items] == ["technician", "accountant", "supervisor", "engineer", "worker"]
    assert row.word_p_method == "sampled-clustered"  # C(8, 4) = 70 attribute-word splits > the budget of 50


def test_same_seed_same_sampled_word_p_values(con, glove):
    test = wefat_defs.get("wefat-occupations")
    first, again, other = (run_wefat(con, test, glove, WefatOptions(budget=1000, seed=seed)) for seed in (1, 1, 2))
    p = lambda row: [it.word_p_value for it in row.items]  # noqa: E731
    assert first.word_p_method == "sampled" and p(first) == p(again) != p(other)
    assert first.r == other.r  # the correlation itself does not depend on the seed


def test_the_wefat_line_fits_80_columns():
    from types import SimpleNamespace

    from stimkit.cli.wefat import summary_line

    r = SimpleNamespace(name="wefat-occupations", encoder="minilm,pooling=mean", context="sentence", r=0.7523, p_value=3.1e-10,
                        rho=0.7121, n=48, slope=45.61, slope_ci_low=30.12, slope_ci_high=60.2,
                        dropped_words=["paralegal", "hygienist", "nutritionist", "appraiser", "machinist", "veterinarian",
                                       "practitioner", "pathologist", "receptionist", "administrator"])
    lines = summary_line(r).splitlines()
    assert lines[0] == "wefat-occupations  minilm,pooling=mean (sentence)" and all(len(line) <= 80 for line in lines)
    assert lines[1] == "    r = 0.752, p = 3.1e-10, rho = 0.712, n = 48, slope = 45.6 [30.1, 60.2]"
    assert " ".join(lines[2:]).split() == ["dropped", *", ".join(r.dropped_words).split()]
