"""Findings that generalise (issue 31): the unit of inference is part of the hypothesis, every
word's influence is stored and a fragile result flagged, legends say what was tested, word vs
sentence pairs come from the test definitions, and a study's alpha is the default of reading it."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

import stimkit
from stimkit import UsageError, stats, store
from stimkit.catalog import definitions as catalog
from stimkit.cli import app
from stimkit.run.options import Options
from stimkit.stats.influence import word_influence
from stimkit.study import study as studies

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "care-tech"
invoke = CliRunner().invoke


def cli(db, *args):
    return invoke(app, ["--db", str(db), *[str(a) for a in args]])


# ------------------------------------------------------------------ influence, by brute force

def brute(X, Y, A, B, words, role, word, alternative, word_units):
    """d and the exact p of the test with one word's stimuli taken out of its role, from scratch."""
    keep = {r: np.array([w != word or r != role for w in words[r]]) for r in "XYAB"}
    x, y, a, b = X[keep["X"]], Y[keep["Y"]], A[keep["A"]], B[keep["B"]]
    s = stats.association(np.vstack([x, y]), a, b)
    d = stats.effect_size(s[:len(x)], s[len(x):])
    if word_units:
        groups, n_gx = stats.group_ids(list(np.array(words["X"])[keep["X"]]), list(np.array(words["Y"])[keep["Y"]]))
        return d, stats.clustered_p(s, groups, n_gx, alternative, method="exact").p
    return d, stats.permutation_p(s, len(x), alternative, "exact").p


@pytest.mark.parametrize("word_units", [False, True])
def test_leaving_each_word_out_equals_recomputing_without_it(word_units):
    """Every target and attribute word, each with several stimuli: d and p (exact) without it
    equal the test recomputed from the vectors without that word's stimuli."""
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(9, 6)) + 0.3, rng.normal(size=(8, 6))
    A, B = rng.normal(size=(9, 6)) + 0.2, rng.normal(size=(8, 6))
    words = {"X": [f"x{i // 3}" for i in range(9)], "Y": [f"y{i // 2}" for i in range(8)],
             "A": [f"a{i // 3}" for i in range(9)], "B": [f"b{i // 2}" for i in range(8)]}
    W = stats.unit_rows(np.vstack([X, Y]))
    found = word_influence(W @ stats.unit_rows(A).T, W @ stats.unit_rows(B).T, 9, *words.values(),
                           alternative="two-sided", method="exact", word_units=word_units)
    assert len(found) == 3 + 4 + 3 + 4 and found.role[:3] == ("X",) * 3
    assert list(found.n_stimuli) == [3] * 3 + [2] * 4 + [3] * 3 + [2] * 4
    for role, word, d, p in zip(found.role, found.word, found.d, found.p):
        want_d, want_p = brute(X, Y, A, B, words, role, word, "two-sided", word_units)
        assert d == pytest.approx(want_d, abs=1e-10) and p == pytest.approx(want_p, abs=1e-12), (role, word)


def test_many_columns_share_partitions_and_each_is_its_own_test():
    """permutation_p and clustered_p over columns: each column's p equals its own test's
    (exact: the same p; dense sampling: within Monte Carlo error of the exact p)."""
    rng = np.random.default_rng(5)
    v = rng.normal(size=(16, 7)) + np.r_[np.full(8, 0.4), np.zeros(8)][:, None]
    exact = [stats.permutation_p(v[:, j], 8, "greater", "exact").p for j in range(7)]
    assert np.array_equal(stats.permutation_p(v, 8, "greater", "exact").p, exact)
    sampled = stats.permutation_p(v, 8, "greater", "sampled", 20_000, np.random.default_rng(1), dense=True)
    assert np.all(np.abs(sampled.p - exact) <= 4 * np.sqrt(np.array(exact) * (1 - np.array(exact)) / 20_000) + 1e-4)
    groups, n_gx = stats.group_ids([i // 2 for i in range(8)], [i // 2 for i in range(8)])
    clustered = stats.clustered_p(v, groups, n_gx, "two-sided", method="exact").p
    assert np.allclose(clustered, [stats.clustered_p(v[:, j], groups, n_gx, "two-sided", method="exact").p
                                   for j in range(7)], atol=0)


# ------------------------------------------------------------------ a planted fragile test, end to end

FRAGILE_A = ["frail", "calm", "plain", "round", "quiet", "blue", "soft", "open"]   # only `frail` carries X
ROBUST_A = ["bright", "clear", "quick", "sharp", "keen", "fresh", "lively", "eager"]  # each carries X
B_WORDS = ["hard", "green", "flat", "loud", "square", "red", "dull", "closed"]
YOUNG = ["teen", "youth", "kid", "junior", "child", "boy", "girl", "baby"]
OLD = ["elder", "senior", "aged", "retiree", "grandpa", "grandma", "widow", "veteran"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Word tests on planted vectors (an `import:` encoder): young terms near e0, old terms near
    -e0, one attribute word (`frail`) at e0 among seven random ones, or eight near e0."""
    root = tmp_path_factory.mktemp("planted")
    rng = np.random.default_rng(11)

    def noise(n, scale):
        v = np.zeros((n, 12))
        v[:, 2:] = rng.normal(size=(n, 10))
        return scale * v / np.linalg.norm(v, axis=1, keepdims=True)

    e0 = np.eye(12)[0]
    vectors = {**dict(zip(YOUNG, e0 + noise(8, 0.3))), **dict(zip(OLD, -e0 + noise(8, 0.3))),
               **dict(zip(FRAGILE_A, np.vstack([e0, noise(7, 1.0)]))), **dict(zip(ROBUST_A, e0 + noise(8, 0.6))),
               **dict(zip(B_WORDS, noise(8, 1.0)))}
    pl.DataFrame({"text": list(vectors), "vector": [list(map(float, v)) for v in vectors.values()]}) \
        .write_parquet(root / "v.parquet")
    lists = root / "lists"
    lists.mkdir()
    (lists / "planted.toml").write_text("".join(
        f'[{name}]\nwords = [{", ".join(chr(34) + w + chr(34) for w in words)}]\n'
        for name, words in (("young", YOUNG), ("old", OLD), ("fragile_a", FRAGILE_A), ("robust_a", ROBUST_A),
                            ("plain_b", B_WORDS))))
    defs = root / "defs"
    defs.mkdir()
    (defs / "planted.toml").write_text(
        '[planted-fragile]\nsets = ["young@word", "old@word", "fragile_a@word", "plain_b@word"]\n'
        '[planted-robust]\nsets = ["young@word", "old@word", "robust_a@word", "plain_b@word"]\n'
        '[planted-reverse]\nsets = ["old@word", "young@word", "robust_a@word", "plain_b@word"]\n')
    db = root / "s.duckdb"
    r = cli(db, "--catalog-dir", defs, "test", "planted-*", "-e", f"import:{root / 'v.parquet'}", "--wordlist-dir", lists)
    assert r.exit_code == 0, r.output
    return {"db": db, "defs": defs, "stderr": r.stderr, "vectors": vectors, "root": root}


def test_a_planted_fragile_test_is_flagged_and_a_robust_one_is_not(planted):
    with stimkit.open(planted["db"], read_only=True) as s:
        rows = {r["test"]: r for r in s.query("SELECT * FROM results").iter_rows(named=True)}
        influence = s.query("SELECT * FROM result_influence WHERE result_id = $id",
                            {"id": rows["planted-fragile"]["result_id"]})
    fragile, robust = rows["planted-fragile"], rows["planted-robust"]
    assert fragile["p_value"] <= 0.01 and fragile["fragile"] and fragile["influential_word"] == "frail"
    assert fragile["influential_role"] == "A" and fragile["influential_p"] > 0.01 and abs(fragile["influential_d"]) < 1
    assert fragile["influence_alpha"] == 0.01 and fragile["units"] == "words" and fragile["p_words"] == fragile["p_value"]
    assert robust["p_value"] <= 0.01 and robust["fragile"] is False and robust["influential_word"] is not None
    # every word of every role, each d and p against a brute-force recomputation from the vectors
    vec = planted["vectors"]
    sets = {"X": YOUNG, "Y": OLD, "A": FRAGILE_A, "B": B_WORDS}
    arrays = {r: np.array([vec[w] for w in ws], dtype=np.float32) for r, ws in sets.items()}  # as stored
    assert influence.height == 32 and set(influence["p_method"]) == {"exact"}  # C(15, 7) <= the influence budget
    for row in influence.iter_rows(named=True):
        d, p = brute(*arrays.values(), sets, row["role"], row["word"], "greater", False)
        assert row["d_without"] == pytest.approx(d, abs=1e-9) and row["p_without"] == pytest.approx(p, abs=1e-12)
        assert row["decision_flip"] == ((row["p_without"] <= 0.01) != (fragile["p_value"] <= 0.01))
    assert influence.filter(pl.col("decision_flip"))["word"].to_list() == ["frail"]


def test_test_results_check_and_report_flag_the_fragile_result(planted, tmp_path):
    lines = planted["stderr"].splitlines()

    def block(test):  # a result's lines: its head line, then its indented lines
        at = next(i for i, line in enumerate(lines) if test in line)
        end = next((i for i in range(at + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
        return lines[at:end]

    flagged = [line for line in block("planted-fragile") if "fragile:" in line]
    assert len(flagged) == 1 and flagged[0].startswith("    fragile: without 'frail' d ")  # indented under its result
    assert not any("fragile" in line for line in block("planted-robust"))
    r = cli(planted["db"], "results", "--format", "csv", "--columns", "test,flags")
    flags = {row["test"]: row["flags"] for row in csv.DictReader(io.StringIO(r.stdout))}
    assert flags["planted-fragile"].startswith("fragile: without 'frail' d ") and flags["planted-robust"] == ""
    assert "is large the other way (alternative greater)" in flags["planted-reverse"]
    r = cli(planted["db"], "check", "--format", "json")
    one_word = [c for c in json.loads(r.stdout)["rows"] if c["check_name"] == "one word"]
    assert [c["tests"] for c in one_word] == ["planted-fragile"] and "without 'frail' (A)" in one_word[0]["detail"]
    assert one_word[0]["verdict"] == "note"
    r = cli(planted["db"], "report", "-o", tmp_path / "rep", "--format", "html")
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "planted-fragile / " in html and "fragile: without 'frail'" in html
    assert "Tested: alternative greater (one-sided); units: words in the 3 word-test results" in html


def test_a_d_large_the_other_way_is_flagged_at_0_8():
    from stimkit.views.text import OPPOSITE_D, flags

    assert OPPOSITE_D == 0.8
    row = {"alternative": "greater", "effect_size": -1.06}
    assert flags(row) == "d -1.06 is large the other way (alternative greater)"
    assert flags({**row, "effect_size": -0.79}) == "" and flags({**row, "alternative": "two-sided"}) == ""
    assert flags({"alternative": "less", "effect_size": 0.8}).startswith("d +0.80 is large the other way")


# ------------------------------------------------------------------ units

def test_a_sentence_test_defaults_to_words_and_the_published_ones_to_sentences():
    mine = catalog.TestDef("mine", ("a@t", "b@t", "c@t", "d@t"), "sentence")
    assert Options().resolved(mine).units == "words" and Options().resolved(mine).clustered
    assert Options(units="sentences").resolved(mine).clustered is False
    assert Options(clustered=True).units == "words"  # the old flag is the new option
    word = catalog.TestDef("w", ("a@word",) * 4, "word")
    for opts in (Options(units="sentences"), Options(clustered=True), Options()):  # never breaks a word test
        assert (opts.resolved(word).units, opts.resolved(word).clustered) == ("words", False)
    published = [t for t in catalog.load_toml().values() if t.context == "sentence"]
    assert len(published) == 46 and {t.units for t in published} == {"sentences"}
    assert {t.paper for t in published} == {"may-2019", "tan-celis-2019"}
    for name in ("may-2019", "tan-celis-2019"):
        assert studies.load(name).options["units"] == "sentences"
    with pytest.raises(UsageError, match="--clustered is --units words"):
        Options(clustered=True, units="sentences")
    with pytest.raises(UsageError, match="words as units \\(its default\\) have no parametric form"):
        Options(method="parametric").resolved(mine)


def test_units_in_test_definitions_and_study_files(tmp_path):
    (tmp_path / "t.toml").write_text('[s]\nsets = ["a@t", "b@t", "c@t", "d@t"]\nunits = "sentences"\npair = "k"\n')
    (t,) = catalog.load_dir(tmp_path).values()
    assert (t.units, t.pair) == ("sentences", "k") and 'units = "sentences"' in catalog.to_toml(t)
    (tmp_path / "t.toml").write_text('[s]\nsets = ["a@t", "b@t", "c@t", "d@t"]\nunits = "items"\n')
    with pytest.raises(UsageError, match="unknown units 'items'"):
        catalog.load_dir(tmp_path)
    study = studies.parse({"name": "x", "tests": ["*"], "options": {
        "units": "words", "budget": 100, "s*": {"units": "sentences", "alternative": "two-sided"}}})
    assert study.options == {"units": "words", "budget": 100}
    assert study.options_for("sent-1") == {"units": "sentences", "alternative": "two-sided"} and study.options_for("w") == {}
    with pytest.raises(UsageError, match="unknown key 'options.s.budget'"):
        studies.parse({"name": "x", "tests": ["*"], "options": {"s": {"budget": 3}}})
    with pytest.raises(UsageError, match="`options.s.units`: input should be 'sentences' or 'words', not 'all'"):
        studies.parse({"name": "x", "tests": ["*"], "options": {"s": {"units": "all"}}})


# ------------------------------------------------------------------ a study of one's own: care-tech on GloVe

@pytest.fixture(scope="module")
def care_tech(tmp_path_factory):
    """The example study (alpha 0.05) on GloVe, with study-wide words as units and
    care-tech-gender-sent in sentences (its own [options."..."] table)."""
    root = tmp_path_factory.mktemp("care")
    shutil.copytree(EXAMPLE, root / "care-tech")
    path = root / "care-tech" / "study.toml"
    path.write_text(path.read_text().replace("[options]\n", '[options]\nclustered = true\n')
                    + '\n[options."care-tech-gender-sent"]\nunits = "sentences"\n')
    db = root / "s.duckdb"
    r = cli(db, "run", path, "-e", "glove-6b-50d", "--budget", "5000", "--format", "csv")
    assert r.exit_code == 0, r.output
    return {"db": db, "study": path, "run": r, "root": root}


def test_a_study_wide_setting_does_not_break_word_tests_and_a_test_has_its_own(care_tech):
    with stimkit.open(care_tech["db"], read_only=True) as s:
        got = {r["test"]: r for r in s.query("SELECT test, units, clustered, p_method, p_value, p_words FROM results")
               .iter_rows(named=True)}
    assert {t: (r["units"], r["clustered"]) for t, r in got.items()} == {
        "care-tech-gender": ("words", False), "care-tech-warmth": ("words", False),
        "care-tech-warmth-sent": ("words", True), "care-tech-gender-sent": ("sentences", False)}
    assert got["care-tech-warmth-sent"]["p_method"].endswith("-clustered")
    sent = got["care-tech-gender-sent"]
    assert sent["p_words"] is not None and sent["p_words"] != sent["p_value"]  # both procedures stored


def test_a_study_s_alpha_is_the_default_of_results_check_and_report(care_tech, tmp_path):
    db = care_tech["db"]
    doc = json.loads(cli(db, "results", "--format", "json").stdout)
    assert (doc["correction"], doc["family"]["alpha"]) == ({"method": "holm", "alpha": 0.05}, 0.05)
    assert doc["family"]["settings"] == "alpha 0.05 and holm correction: of study care-tech"
    assert json.loads(cli(db, "results", "--format", "json", "--alpha", "0.01").stdout)["family"]["alpha"] == 0.01
    r = cli(db, "check", "--format", "json")
    assert json.loads(r.stdout)["alpha"] == 0.05 and "at alpha 0.05 (alpha 0.05 and holm correction" in r.stderr
    r = cli(db, "report", "-o", tmp_path / "rep", "--format", "html")
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "* p <= 0.05" in html and "alpha 0.05 and holm correction: of study care-tech" in html
    with stimkit.open(db, read_only=True) as s:
        assert s.study_alpha(["care-tech-gender-sent"]) == 0.05
        assert store.one(s.con, "SELECT study, alpha, correction FROM runs") == ("care-tech", 0.05, "holm")


def test_check_pairs_word_and_sentence_tests_by_their_word_lists(care_tech):
    r = cli(care_tech["db"], "check", "--format", "json")
    pairs = {c["tests"]: c for c in json.loads(r.stdout)["rows"] if c["check_name"] == "word vs sentence"}
    assert set(pairs) == {"care-tech-gender / care-tech-gender-sent", "care-tech-warmth / care-tech-warmth-sent"}
    assert all(len(c["result_ids"]) == 2 and c["verdict"] != "not comparable" for c in pairs.values())


def test_an_explicit_pair_key_pairs_tests_on_other_lists(tmp_path):
    from stimkit.analysis.families import define_family
    from stimkit.analysis.consistency import consistency

    con = store.connect(tmp_path / "s.duckdb")
    con.execute("INSERT INTO runs (run_id, command, seed, stimkit_version) VALUES ('r', 'test', 0, 'x')")
    for i, (test, context, lists, key) in enumerate([
            ("mine-word", "word", ["a", "b", "c", "d"], "k"), ("mine-sent", "sentence", ["a2", "b", "c", "d"], "k"),
            ("other-word", "word", ["a", "b", "c", "d"], None), ("other-sent", "sentence", ["a", "b", "c", "d"], None)]):
        con.execute("""INSERT INTO results (result_id, run_id, test, test_source, encoder, model, fingerprint, context,
            n_dropped_oov, n_balanced_away, ddof, clustered, stimkit_version, p_value, effect_size, alternative, units,
            word_lists, pair_key, created_at) VALUES (?, 'r', ?, 'user', 'e', 'e', 'f', ?, 0, 0, 1, false, 'x', 0.5, 0.1,
            'greater', 'words', ?, ?, now() + to_seconds(?))""", [f"r/{test}", test, context, lists, key, i])
    define_family(con)
    pairs = consistency(con, 0.01).filter(pl.col("check_name") == "word vs sentence")["tests"].to_list()
    assert pairs == ["mine-word / mine-sent", "other-word / other-sent"]
    con.close()


def test_legends_and_captions_state_the_alternative_and_the_units(care_tech):
    db = care_tech["db"]
    tested = ("alternative greater (one-sided); units: words in the 2 word-test results; sentences in 1, words in 1 "
              "of the 2 sentence-test results")
    r = cli(db, "results", "--table", "--format", "table")
    # no cell carries ^ (the sentence-unit result is significant with words as units too), so the
    # legend does not explain it (a legend only for the marks that appear: issue 38)
    assert f"tested: {tested}" in r.stderr and "^" not in r.stdout and "^ significant only" not in r.stderr
    assert f"tested: {tested}" in cli(db, "results", "--format", "table").stderr
    for fmt in ("latex", "markdown"):
        out = cli(db, "results", "--table", "--format", fmt).stdout + cli(db, "results", "--format", fmt).stdout
        assert out.count(f"Tested: {tested}") == 2, fmt
        assert "significant only with sentences as units" in out
    doc = json.loads(cli(db, "results", "--format", "json").stdout)["family"]
    assert doc["tested"] == tested and doc["alternatives"] == {"greater": 4}
    assert doc["units"] == [{"tests": "word", "units": "words", "results": 2},
                            {"tests": "sentence", "units": "sentences", "results": 1},
                            {"tests": "sentence", "units": "words", "results": 1}]
    assert f"tested: {tested}" in care_tech["run"].stderr  # run's Table 4 legend


def test_a_result_significant_only_with_sentences_as_units_gets_its_own_mark(catalog_db, tmp_path):
    """sent-weat5 on GloVe (the published test, sentence units): p 2e-05 over sentences, not
    significant with whole words as units; `^` in the table, LaTeX, Markdown and check."""
    db = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, db)
    assert cli(db, "test", "sent-weat5", "weat5", "-e", "glove-6b-50d", "--budget", "20000").exit_code == 0
    with stimkit.open(db, read_only=True) as s:
        df = s.results()
    row = df.filter(pl.col("test") == "sent-weat5").row(0, named=True)
    assert row["units"] == "sentences" and row["p_value"] <= 0.01 < row["p_words"]
    assert row["rejected"] and not row["rejected_words"] and row["sentences_only"]
    table = cli(db, "results", "--table", "--format", "csv").stdout
    assert any(line.startswith("sent-weat5,") and "**^ [" in line for line in table.splitlines())
    assert "**\\textasciicircum{}" in cli(db, "results", "--table", "--format", "latex").stdout
    assert "\\*\\*^" in cli(db, "results", "--table", "--format", "markdown").stdout
    r = cli(db, "check")
    assert "^ after a p: significant at 0.01 only with sentences as units" in r.stderr


# ------------------------------------------------------------------ old stores

def test_an_old_store_migrates_and_its_results_keep_their_hypotheses(tmp_path, monkeypatch):
    from stimkit.store import connection

    real = connection.migrations
    monkeypatch.setattr(connection, "migrations", lambda: [(n, p) for n, p in real() if n < 13])
    con = store.connect(tmp_path / "old.duckdb")
    con.execute("INSERT INTO runs (run_id, command, seed, stimkit_version) VALUES ('r', 'run may-2019', 0, 'x')")
    for test, context, clustered in (("weat1", "word", False), ("sent-weat1", "sentence", False),
                                     ("sent-weat2", "sentence", True)):
        con.execute("""INSERT INTO results (result_id, run_id, test, test_source, encoder, model, fingerprint, context,
            x_sql, y_sql, a_sql, b_sql, n_dropped_oov, n_balanced_away, ddof, clustered, stimkit_version, p_value,
            min_p, p_method, effect_size, alternative) VALUES (?, 'r', ?, 'catalog', 'e', 'e', 'f', ?, ?, ?, ?,
            'SELECT x FROM t', 0, 0, 1, ?, 'x', 0.001, 1e-5, 'sampled', 1.0, 'greater')""",
                    [f"r/{test}", test, context, *(catalog.set_sql(f"{n}@{'word' if context == 'word' else 'may2019'}")
                                                    for n in ("flowers", "insects", "pleasant")), clustered])
    con.close()
    monkeypatch.setattr(connection, "migrations", real)
    con = store.connect(tmp_path / "old.duckdb")
    got = {r[0]: r[1:] for r in store.rows(con, "SELECT test, units, p_words, word_lists, hypothesis FROM result_hypotheses")}
    assert got["weat1"][:3] == ("words", 0.001, ["flowers", "insects", "pleasant", None])
    assert got["sent-weat1"][:2] == ("sentences", None) and "| sentences |" in got["sent-weat1"][3]
    assert got["sent-weat2"][:2] == ("words", 0.001) and "| words |" in got["sent-weat2"][3]
    assert store.one(con, "SELECT count(*) FROM result_influence")[0] == 0
    con.close()
    with stimkit.open(tmp_path / "old.duckdb", read_only=True) as s:
        df = s.results()
        assert df.height == 3 and not df["sentences_only"].any() and df.family.alpha == 0.01
        assert "not all from a study's run" in df.family.settings


def test_an_import_is_a_question_about_words_unless_the_importer_says_sentences(tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    doc = {key: {"category": key, "examples": [f"This is {key} {i}." for i in range(3)]}
           for key in ("targ1", "targ2", "attr1", "attr2")}
    (folder / "mine.jsonl").write_text(json.dumps(doc))
    db = tmp_path / "s.duckdb"
    assert cli(db, "import", "sentbias", folder).exit_code == 0
    assert cli(db, "import", "sentbias", folder, "--prefix", "p:", "--units", "sentences").exit_code == 0
    r = cli(db, "import", "sentbias", folder, "--prefix", "q:", "--units", "lines")
    assert r.exit_code == 2 and "--units: unknown units 'lines'" in r.stderr
    with stimkit.open(db, read_only=True) as s:
        tests = catalog.load(s.con)
    mine, theirs = tests["import:mine"], tests["p:mine"]
    assert (mine.units, theirs.units) == (None, "sentences")
    assert Options().resolved(mine).units == "words" and Options().resolved(theirs).units == "sentences"
