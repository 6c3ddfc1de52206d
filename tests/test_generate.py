"""Versioned generation, spans, and all-or-nothing writes."""

import textwrap

import pytest

from stimkit import StimkitError, store
from stimkit.stimuli import generate, wordlists
from stimkit.stimuli.generate import SetSpec
from stimkit.stimuli.templates import TemplateSet

from conftest import snapshot


def write_lists(tmp_path, body: str):
    d = tmp_path / "lists"
    d.mkdir(exist_ok=True)
    (d / "mine.toml").write_text(textwrap.dedent(body))
    return d


SMALL = """
[targets]
category = "Targets"
words = ["caress", "freedom", { word = "friend", person = true }, "Adam"]
"""


def gen(con, d, *specs):
    return generate.generate(con, [SetSpec.parse(s) for s in specs], wordlists.load_all(d))


def test_spans_point_at_the_word_form(catalog_con):
    forms = {}
    for wl in wordlists.load_all().values():
        for w in wl.words:
            base = (w.text, w.singular, w.plural)
            forms[(wl.name, w.text)] = set(base) | {f[:1].upper() + f[1:] for f in base}
    rows = store.rows(catalog_con, "SELECT wordlist, word, stimulus, span_start, span_end FROM current_stimuli")
    assert len(rows) > 5000
    for wordlist, word, stimulus, s, e in rows:
        assert stimulus[s:e] in forms[(wordlist, word)], (word, stimulus, s, e)


def test_person_override_changes_the_sentence(empty_con, tmp_path):
    d = write_lists(tmp_path, SMALL)
    gen(empty_con, d, "targets@may2019")
    sentences = {r[0] for r in empty_con.sql("SELECT stimulus FROM current_stimuli").fetchall()}
    assert "A friend is a person." in sentences and "Friends are people." in sentences
    assert "A caress is a thing." in sentences and "It is a caress." in sentences
    assert "It is a friend." not in sentences
    assert "The person's name is Adam." in sentences
    # 14 (thing) + 4 (mass noun) + 13 (person) + 8 (name)
    assert len(sentences) == 39


def test_regenerate_is_a_noop_and_changes_make_new_versions(empty_con, tmp_path):
    d = write_lists(tmp_path, SMALL)
    first = gen(empty_con, d, "targets@may2019", "targets@word")
    assert [r["status"] for r in first] == ["new", "new"]
    before = snapshot(empty_con)
    again = gen(empty_con, d, "targets@may2019", "targets@word")
    assert [r["status"] for r in again] == ["unchanged", "unchanged"]
    assert snapshot(empty_con) == before

    old_version = first[1]["version"]
    old_rows = empty_con.execute("SELECT * FROM stimuli WHERE set_version = ? ORDER BY ordinal", [old_version]).fetchall()
    d = write_lists(tmp_path, SMALL.replace('"Adam"]', '"Adam", "Eve"]'))
    changed = gen(empty_con, d, "targets@word")
    assert changed[0]["status"] == "new" and changed[0]["version"] != old_version
    # the old version is still there, unchanged; the new one is current
    assert empty_con.execute("SELECT * FROM stimuli WHERE set_version = ? ORDER BY ordinal", [old_version]).fetchall() == old_rows
    assert store.one(empty_con, "SELECT version FROM current_sets WHERE name = 'targets@word'")[0] == changed[0]["version"]
    assert store.one(empty_con, "SELECT count(*) FROM stimulus_sets WHERE name = 'targets@word'")[0] == 2

    d = write_lists(tmp_path, SMALL)  # revert: the old version becomes current again, nothing is rewritten
    restored = gen(empty_con, d, "targets@word")
    assert restored[0] == {**restored[0], "status": "restored", "version": old_version}
    assert store.one(empty_con, "SELECT version FROM current_sets WHERE name = 'targets@word'")[0] == old_version


def test_template_change_makes_a_new_version(empty_con, tmp_path, monkeypatch):
    import shutil
    from stimkit.paths import data_dir
    root = tmp_path / "templates"
    shutil.copytree(data_dir("templates"), root)
    monkeypatch.setenv("STIMKIT_TEMPLATES_DIR", str(root))
    d = write_lists(tmp_path, SMALL)
    v1 = gen(empty_con, d, "targets@may2019")[0]["version"]
    (root / "may2019" / "name.j2").write_text("Meet {{ word }}.\n")
    v2 = gen(empty_con, d, "targets@may2019")[0]
    assert v2["status"] == "new" and v2["version"] != v1
    names = empty_con.sql("SELECT stimulus FROM current_stimuli WHERE word = 'Adam'").fetchall()
    assert names == [("Meet Adam.",)]


def test_failure_mid_write_leaves_the_store_as_it_was(empty_con, tmp_path, monkeypatch):
    d = write_lists(tmp_path, SMALL)
    gen(empty_con, d, "targets@word")
    before = snapshot(empty_con)
    calls = {"n": 0}
    real = generate.insert_set

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(generate, "insert_set", failing)
    with pytest.raises(RuntimeError):
        gen(empty_con, d, "targets@may2019", "targets@heilman/engineer_attribute")
    assert calls["n"] == 2
    assert snapshot(empty_con) == before


@pytest.mark.parametrize("body, message", [
    ('[a]\nwords = ["x", "y", "x"]\n', 'mine.toml:2: list \'a\': duplicate word \'x\''),
    ('[a]\nwords = []\n', "mine.toml:1: list 'a': empty word list"),
    ('[a]\nwords = [{ word = "x", kind = "noun" }]\n', "unknown kind 'noun' for word 'x'"),
    ('[a]\nwrods = ["x"]\n', "mine.toml:1: list 'a': unknown key 'wrods'"),
    ('[a]\nwords = [{ word = "x", plurall = "xs" }]\n', "word 'x': unknown key 'plurall'"),
    ('[a]\nwords = ["x",\n', "mine.toml: not valid TOML"),
])
def test_bad_word_lists(tmp_path, body, message):
    d = write_lists(tmp_path, body)
    with pytest.raises(StimkitError) as e:
        wordlists.load_all(d)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_template_syntax_error_names_file_and_line(tmp_path):
    root = tmp_path / "t"
    (root / "broken").mkdir(parents=True)
    (root / "broken" / "default.j2").write_text("{# fine #}\nThis is {{ word }}.\nThat is {{ word }.\n")
    tset = TemplateSet("broken", root)
    with pytest.raises(StimkitError, match=r"broken/default\.j2:3: template syntax error"):
        tset.templates("default")


def test_undefined_variable_names_the_template(tmp_path):
    root = tmp_path / "t"
    (root / "typo").mkdir(parents=True)
    (root / "typo" / "default.j2").write_text("This is {{ wrod }}.\n")
    lists = {"l": wordlists.WordList("l", "L", "", "", "x", (wordlists.Word("x", "count_noun", False, "x", "xs"),))}
    with pytest.raises(StimkitError, match=r"typo/default:1: 'wrod' is undefined \(rendering word 'x'\)"):
        generate.render(SetSpec("l", "typo"), lists, {"typo": TemplateSet("typo", root)})


def test_pronouns_need_a_gendered_list(tmp_path):
    d = write_lists(tmp_path, SMALL)
    with pytest.raises(StimkitError, match=r"heilman/competent_1-:2: 'he' is undefined"):
        generate.render(SetSpec("targets", "heilman", "competent_1-"), wordlists.load_all(d), {})


def test_migrations_are_idempotent_and_versioned(tmp_path):
    con = store.connect(tmp_path / "m.duckdb")
    v = store.schema_version(con)
    assert v == max(n for n, _ in store.migrations())
    assert store.migrate(con) == v
    con.close()
    con = store.connect(tmp_path / "m.duckdb")
    assert store.one(con, "SELECT count(*) FROM schema_migrations")[0] == len(store.migrations())


def test_an_older_store_migrates_forward_keeping_its_data(tmp_path, monkeypatch):
    all_migrations = store.migrations()
    monkeypatch.setattr(store.connection, "migrations", lambda: all_migrations[:1])  # a store from before encoders existed
    con = store.connect(tmp_path / "old.duckdb")
    d = write_lists(tmp_path, SMALL)
    gen(con, d, "targets@may2019")
    before = store.rows(con, "SELECT * FROM stimuli ORDER BY ALL")
    assert store.schema_version(con) == 1
    con.close()
    monkeypatch.setattr(store.connection, "migrations", lambda: all_migrations)
    con = store.connect(tmp_path / "old.duckdb")
    assert store.schema_version(con) == all_migrations[-1][0]
    after = store.rows(con, "SELECT * FROM stimuli ORDER BY ALL")
    assert [row[:len(before[0])] for row in after] == before  # columns added later come after, NULL
    assert store.one(con, "SELECT count(*) FROM results")[0] == 0  # the new tables are there
