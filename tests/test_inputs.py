"""Bad input on the stimulus side (issue 12): names and paths stay put, stimuli that cannot
be right are refused, word lists scale linearly, and every refusal is one line that names
the culprit, exits 1 and leaves the store as it was."""

import json
import re
import tomllib
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stimkit import StimkitError, store
from stimkit.stimuli import generate, grammar, wordlists
from stimkit.catalog import sentbias
from stimkit.cli import app
from stimkit.encoders import resolve
from stimkit.paths import data_dir
from stimkit.stimuli.templates import TemplateSet

from conftest import REFERENCE, REPO, snapshot

runner = CliRunner()
BUILTIN_LISTS = data_dir("wordlists")


def run(db, *args):
    return runner.invoke(app, ["--db", str(db), *map(str, args)])


def state(db):
    con = store.connect(db)
    try:
        return snapshot(con)
    finally:
        con.close()


def refused(db, args, *messages, code=1):
    """The command exits `code` with one line naming every part of `messages`; the store is unchanged."""
    before = state(db)
    r = run(db, *args)
    assert r.exit_code == code, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    for m in messages:
        assert m in lines[0], (m, lines[0])
    assert state(db) == before
    return lines[0]


@pytest.fixture
def db(tmp_path):
    """A store holding the built-in flowers under the word template."""
    path = tmp_path / "s.duckdb"
    assert run(path, "generate", "-q", "-w", "flowers", "-t", "word").exit_code == 0
    return path


def write(folder, name, body):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    return path


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def current(db, name):
    con = store.connect(db)
    try:
        return store.rows(con, "SELECT stimulus, span_start, span_end FROM current_stimuli WHERE set_name = ? ORDER BY ordinal", [name])
    finally:
        con.close()


# 3. Names and paths -------------------------------------------------------------------

def test_user_list_named_like_a_builtin_needs_override_and_is_recorded(db, tmp_path):
    d = tmp_path / "mine"
    write(d, "mine.toml", '# my lists\n[flowers]\nwords = ["rose", "tulip"]\n')
    refused(db, ["generate", "--wordlist-dir", d, "-w", "flowers", "-t", "word"],
            f"{d / 'mine.toml'}:2: list 'flowers' would replace the built-in list", "caliskan2017.toml:4", "--override",
            code=2)  # a usage error: the flag (or the study key) says what to do

    r = run(db, "generate", "--wordlist-dir", d, "-w", "flowers", "-t", "word", "--override")
    assert r.exit_code == 0, r.output
    assert current(db, "flowers@word") == [("rose", 0, 4), ("tulip", 0, 5)]
    con = store.connect(db)
    rows = store.rows(con, "SELECT provenance FROM stimulus_sets WHERE name = 'flowers@word' ORDER BY created_at")
    con.close()
    assert rows[0][0] is None  # the built-in version, still there
    assert json.loads(rows[1][0]) == {"overrides": [{
        "word_list": "flowers", "builtin": f"{BUILTIN_LISTS / 'caliskan2017.toml'}:4", "user": f"{d / 'mine.toml'}:2"}]}


def test_user_list_equal_to_a_builtin_is_no_collision(db, tmp_path):
    d = tmp_path / "mine"
    shutil.copytree(BUILTIN_LISTS, d)
    write(d, "extra.toml", '[herbs]\nwords = ["basil", "sage"]\n')
    before = current(db, "flowers@word")
    r = run(db, "generate", "--wordlist-dir", d, "-w", "flowers", "-w", "herbs", "-t", "word")
    assert r.exit_code == 0, r.output
    assert "1 new, 0 restored, 1 unchanged" in r.output  # flowers: the same version as the built-in
    assert current(db, "flowers@word") == before
    assert current(db, "herbs@word") == [("basil", 0, 5), ("sage", 0, 4)]


def test_user_template_set_named_like_a_builtin_needs_override(db, tmp_path):
    t = tmp_path / "tpl"
    write(t / "word", "default.j2", "The {{ word }}.\n")
    refused(db, ["generate", "-w", "flowers", "-t", "word", "--template-dir", t],
            f"{t / 'word'}: template set 'word' would replace the built-in set", "--override", code=2)
    r = run(db, "generate", "-w", "flowers", "-t", "word", "--template-dir", t, "--override")
    assert r.exit_code == 0, r.output
    assert current(db, "flowers@word")[0] == ("The aster.", 4, 9)
    con = store.connect(db)
    prov = store.one(con, "SELECT provenance FROM current_sets WHERE name = 'flowers@word'")[0]
    con.close()
    assert json.loads(prov)["overrides"] == [
        {"template_set": "word", "builtin": str(data_dir("templates") / "word"), "user": str(t / "word")}]


def test_an_inherited_user_set_is_a_collision_too(db, tmp_path):
    # may2019_fixed (built-in) inherits may2019: a user's may2019 would change it.
    t = tmp_path / "tpl"
    write(t / "may2019", "count_noun.j2", "A {{ word }} here.\n")
    refused(db, ["generate", "-w", "flowers", "-t", "may2019_fixed", "--template-dir", t],
            "template set 'may2019' would replace the built-in set", code=2)


def test_user_template_set_inherits_and_imports_builtins(db, tmp_path):
    t = tmp_path / "tpl"
    write(t / "mine", "_base", "may2019\n")
    write(t / "mine", "count_noun.j2", '{% import "heilman/_script.j2" as s %}\n{{ s.products(word) }}\n')
    r = run(db, "generate", "-w", "flowers", "-t", "mine", "--template-dir", t)
    assert r.exit_code == 0, r.output
    got = current(db, "flowers@mine")
    assert got[0][0].startswith("The products aster is responsible for")
    assert len(got) == 25  # 25 flowers, one count-noun line each


@pytest.mark.parametrize("spec, message", [
    ("../outside", "-t '../outside': template set name '..' has a path separator, '..'"),
    ("..", "-t '..': template set name '..'"),
    ("word/../../x", "has no template file '../../x'"),
])
def test_template_names_resolve_inside_the_root(db, tmp_path, spec, message):
    write(tmp_path / "outside", "default.j2", "Outside {{ word }}.\n")
    refused(db, ["generate", "-w", "flowers", "-t", spec], message)


def test_template_set_folders_and_bases_stay_inside(db, tmp_path):
    t = tmp_path / "tpl"
    write(tmp_path / "elsewhere", "default.j2", "Elsewhere {{ word }}.\n")
    t.mkdir()
    (t / "linked").symlink_to(tmp_path / "elsewhere")
    refused(db, ["generate", "-w", "flowers", "-t", "linked", "--template-dir", t],
            "template set 'linked'", "leads outside")
    write(t / "sneaky", "_base", "../elsewhere\n")
    refused(db, ["generate", "-w", "flowers", "-t", "sneaky", "--template-dir", t],
            f"{t / 'sneaky' / '_base'}: template set name '../elsewhere'")
    write(t / "loop", "_base", "loop\n")
    refused(db, ["generate", "-w", "flowers", "-t", "loop", "--template-dir", t], "`_base` files loop (loop -> loop)")


@pytest.mark.parametrize("name", ["a/b", "x@y", "..", "tab\there"])
def test_word_list_names_are_checked(db, tmp_path, name):
    d = tmp_path / "mine"
    write(d, "mine.toml", f'# lists\n[{json.dumps(name)}]\nwords = ["x"]\n')
    refused(db, ["generate", "--wordlist-dir", d], f"{d / 'mine.toml'}:2: word list name {name!r}")


def test_import_prefix_cannot_leave_the_folder(db, tmp_path):
    src = tmp_path / "published"
    src.mkdir()
    shutil.copy(REFERENCE / "weat1.jsonl", src)
    refused(db, ["import", "sentbias", src, "--prefix", "../x"],
            f"{src / 'weat1.jsonl'} with --prefix '../x': test name '../xweat1' has a path separator")
    refused(db, ["import", "sentbias", src, "--prefix", "a/"], "test name 'a/weat1'")
    r = run(db, "import", "sentbias", src, "--prefix", "ok:")
    assert r.exit_code == 0 and "ok:weat1" in r.output


def test_an_import_named_like_a_catalog_test_needs_override(db, tmp_path):
    src = tmp_path / "published"
    src.mkdir()
    shutil.copy(REFERENCE / "weat1.jsonl", src)
    refused(db, ["import", "sentbias", src, "--prefix", ""],
            f"{src / 'weat1.jsonl'}: test 'weat1' would replace the catalog test of that name", "--override")
    r = run(db, "import", "sentbias", src, "--prefix", "", "--override")
    assert r.exit_code == 0, r.output
    con = store.connect(db)
    rows = store.rows(con, "SELECT name, provenance->>'$.overrides[0].test' FROM current_sets WHERE name LIKE 'weat1/%' ORDER BY name")
    con.close()
    assert rows == [("weat1/attr1", "weat1"), ("weat1/attr2", "weat1"), ("weat1/targ1", "weat1"), ("weat1/targ2", "weat1")]


def test_export_refuses_a_non_empty_folder_and_stays_inside(catalog_db, tmp_path):
    db = tmp_path / "c.duckdb"
    shutil.copy(catalog_db, db)
    out = tmp_path / "out"
    write(out, "notes.txt", "mine\n")
    write(tmp_path, "precious.txt", "keep\n")
    (out / "weat1.jsonl").symlink_to(tmp_path / "precious.txt")
    refused(db, ["export", "sentbias", out, "--test", "weat1"], f"{out}: folder is not empty", "--force")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "weat1.jsonl"]

    r = run(db, "export", "sentbias", out, "--test", "weat1", "--force")
    assert r.exit_code == 0, r.output
    # the link was replaced, not followed; the other file is left alone
    assert (tmp_path / "precious.txt").read_text() == "keep\n"
    assert not (out / "weat1.jsonl").is_symlink()
    assert (out / "weat1.jsonl").stat().st_mode & 0o777 == 0o666 & ~current_umask()
    assert json.loads((out / "weat1.jsonl").read_text())["targ1"]["examples"][0] == "aster"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "weat1.jsonl"]

    # a file where the folder should be, and a folder that cannot be made
    refused(db, ["export", "sentbias", out / "notes.txt", "--test", "weat1"], f"{out / 'notes.txt'}: not a folder")
    refused(db, ["export", "sentbias", out / "notes.txt" / "sub", "--test", "weat1"],
            f"{out / 'notes.txt' / 'sub'}: cannot write")


def test_export_refuses_a_test_name_that_would_leave_the_folder(catalog_con, tmp_path):
    row = store.one(catalog_con, "SELECT x_set, y_set, a_set, b_set FROM (SELECT 'flowers@word' x_set, 'insects@word' y_set,"
                    " 'pleasant@word' a_set, 'unpleasant@word' b_set)")
    catalog_con.execute("INSERT INTO imported_tests (name, source, x_set, y_set, a_set, b_set) VALUES (?, 'x', ?, ?, ?, ?)",
                        ["../evil", *row])
    with pytest.raises(StimkitError, match=r"test name '\.\./evil' has a path separator"):
        sentbias.export(catalog_con, tmp_path / "out", ["../evil"])
    assert not (tmp_path / "evil.jsonl").exists() and not (tmp_path / "out").exists()


# 4. Stimuli that cannot be right --------------------------------------------------------

def test_an_empty_rendering_is_refused(db, tmp_path):
    t = tmp_path / "tpl"
    write(t / "blank", "default.j2", "{% if false %}Never {{ word }}.{% endif %}\n")
    refused(db, ["generate", "-w", "flowers", "-t", "blank", "--template-dir", t],
            f"{t / 'blank' / 'default.j2'}: every line renders empty for word 'aster'",
            f"list 'flowers', {BUILTIN_LISTS / 'caliskan2017.toml'}:4")


def test_an_empty_word_list_makes_no_set():
    lists = {"none": wordlists.WordList("none", "None", "", "", "made.toml", ())}
    with pytest.raises(StimkitError, match=r"^set 'none@word': word list 'none' \(made.toml\) has no words$"):
        generate.render(generate.SetSpec("none", "word"), lists, {})


@pytest.mark.parametrize("line", ["This is a thing.", "This is {{ text }}.", "This is {{ word[:2] }}.",
                                  "This is {{ word|length }}."])
def test_a_sentence_without_the_word_is_refused(db, tmp_path, line):
    t = tmp_path / "tpl"
    write(t / "nowords", "default.j2", "{# a comment #}\n" + line + "\n")
    refused(db, ["generate", "-w", "flowers", "-t", "nowords", "--template-dir", t],
            "nowords/default:2: the sentence", "does not contain the word 'aster'", "{# word-less #}")


def test_word_less_templates_are_declared(db, tmp_path):
    t = tmp_path / "tpl"
    write(t / "lines", "default.j2", """
        This is {{ word }}.
        There is a thing here. {# word-less #}
        """)
    write(t / "files", "default.j2", """
        {# word-less #}
        There is a thing here.
        Something is here.
        """)
    r = run(db, "generate", "-w", "flowers", "-t", "lines", "-t", "files", "--template-dir", t)
    assert r.exit_code == 0, r.output
    assert current(db, "flowers@lines")[:2] == [("This is aster.", 8, 13), ("There is a thing here.", None, None)]
    assert current(db, "flowers@files")[:2] == [("There is a thing here.", None, None), ("Something is here.", None, None)]
    assert len(current(db, "flowers@files")) == 50


@pytest.mark.parametrize("line, message", [
    ("{{ word }} {{ 1/0 }}", "code/default:1: ZeroDivisionError: division by zero (rendering word 'rose')"),
    ("{{ word + 1 }}", "code/default:1: TypeError: can only concatenate str"),
    ("{{ word }}{{ 'ab' * 99999 }}", "code/default:1: template error: repetition to 199998 items is over 10000"),
    ("{{ word }}{{ 9 ** 999 }}", "code/default:1: template error: exponent 999 is over 64"),
    ("{{ word.__class__.__mro__ }}", "code/default:1: template error: access to attribute '__class__'"),
])
def test_template_code_errors_name_the_line(tmp_path, line, message):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "default.j2").write_text(line + "\n")
    lists = {"l": wordlists.WordList("l", "L", "", "", "x", (WORDS["thing"],))}
    with pytest.raises(StimkitError) as e:
        generate.render(generate.SetSpec("l", "code"), lists, {"code": TemplateSet("code", tmp_path)})
    assert message in str(e.value) and "\n" not in str(e.value)


def write_vectors(path, rows, header=True):
    lines = [f"{len(rows)} 3"] if header else []
    path.write_text("\n".join(lines + [f"{w} {' '.join(v)}" for w, v in rows]) + "\n")
    return path


@pytest.mark.parametrize("header, bad, line", [(True, "nan", 3), (False, "inf", 2), (False, "-Infinity", 2)])
def test_nan_or_inf_in_a_vectors_file_names_the_line(tmp_path, monkeypatch, header, bad, line):
    monkeypatch.setenv("STIMKIT_CACHE", str(tmp_path / "cache"))
    path = write_vectors(tmp_path / "v.txt", [("this", ["1", "0", "0"]), ("is", ["0", bad, "0"]), ("a", ["1", "1", "1"])], header)
    with pytest.raises(StimkitError) as e:
        resolve(f"vectors:{path}").encode(["this is a"], [None])
    assert str(e.value) == f"{path}:{line}: word 'is' has a NaN or infinite value (encoder 'vectors:{path}')"
    assert not (tmp_path / "cache" / "vectors").exists() or not any((tmp_path / "cache" / "vectors").iterdir())


def test_nan_in_a_vectors_file_via_encode_leaves_the_store(db, tmp_path, monkeypatch):
    monkeypatch.setenv("STIMKIT_CACHE", str(tmp_path / "cache"))
    assert run(db, "generate", "-q", "-w", "insects", "-w", "pleasant", "-w", "unpleasant", "-t", "word").exit_code == 0
    path = write_vectors(tmp_path / "v.txt", [("aster", ["1", "0", "0"]), ("ant", ["0", "nan", "0"])])
    refused(db, ["encode", "-e", f"vectors:{path}", "--test", "weat1"], f"{path}:3: word 'ant' has a NaN or infinite value")


def test_nan_in_a_binary_vectors_file_names_the_row(tmp_path, monkeypatch):
    from gensim.models import KeyedVectors
    monkeypatch.setenv("STIMKIT_CACHE", str(tmp_path / "cache"))
    kv = KeyedVectors(3)
    kv.add_vectors(["this", "is", "a"], np.array([[1, 0, 0], [0, 1, 0], [1, np.nan, 1]], dtype=np.float32))
    path = tmp_path / "v.bin"
    kv.save_word2vec_format(str(path), binary=True)
    with pytest.raises(StimkitError, match=rf"^{path}: vector 3: word 'a' has a NaN or infinite value"):
        resolve(f"vectors:{path}").encode(["this"], [None])


# 5 and 9. Line numbers: linear, and a duplicate at its second occurrence ---------------------

def test_a_duplicate_word_is_reported_at_its_second_occurrence(tmp_path):
    d = tmp_path / "mine"
    write(d, "mine.toml", """
        [a]
        words = [
          "x",
          "y",
          { word = "z", kind = "adjective" },
          "x",
        ]
        """)
    with pytest.raises(StimkitError) as e:
        wordlists.load_all(d)
    assert str(e.value) == f"{d / 'mine.toml'}:6: list 'a': duplicate word 'x' (first at line 3)"


def test_line_numbers_in_a_long_list(tmp_path):
    d = tmp_path / "mine"
    words = [f"w{i}" for i in range(20_000)]
    body = "[big]\nwords = [\n" + "".join(f'  "{w}",\n' for w in words) + "]\n\n[second]\nwords = ['x', 'y', 'x']\n"
    write(d, "mine.toml", body)
    with pytest.raises(StimkitError, match=rf"mine\.toml:{20_000 + 6}: list 'second': duplicate word 'x' \(first at line {20_000 + 6}\)"):
        wordlists.load_all(d)
    write(d, "mine.toml", body.replace("'y', 'x'", "'y', 'z'").replace('"w19999"', '"bad\\u0007"'))
    with pytest.raises(StimkitError, match=rf"mine\.toml:{20_000 + 2}: list 'big': word 'bad\\x07' holds the character U\+0007"):
        wordlists.load_all(d)


# 8. Encodings and interrupts --------------------------------------------------------

def test_a_non_utf8_word_list_names_the_file_and_line(db, tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "latin1.toml").write_bytes('[cafes]\nwords = [\n  "caf\u00e9",\n]\n'.encode("latin-1"))
    refused(db, ["generate", "--wordlist-dir", d], f"{d / 'latin1.toml'}:3: not UTF-8 (byte 0xe9 at offset 24)")


def test_non_utf8_templates_and_imports_name_the_file(db, tmp_path):
    t = tmp_path / "tpl"
    (t / "latin").mkdir(parents=True)
    (t / "latin" / "default.j2").write_bytes("This is {{ word }}.\nC'est {{ word }}, d\u00e9j\u00e0.\n".encode("latin-1"))
    refused(db, ["generate", "-w", "flowers", "-t", "latin", "--template-dir", t],
            f"{t / 'latin' / 'default.j2'}:2: not UTF-8")
    src = tmp_path / "published"
    src.mkdir()
    (src / "t.jsonl").write_bytes('{"targ1": {"examples": ["\u00e9"]}}'.encode("latin-1"))
    refused(db, ["import", "sentbias", src], f"{src / 't.jsonl'}:1: not UTF-8")


DRIVER = """
import sys, time
from stimkit.stimuli import generate
from stimkit.cli import app
real, calls = generate.insert_set, [0]
def slow(*args, **kwargs):
    calls[0] += 1
    real(*args, **kwargs)
    if calls[0] == 2:  # inside the transaction, one set written: say so, then wait for SIGINT
        print("writing", flush=True)
        time.sleep(60)
generate.insert_set = slow
app(sys.argv[1:])
"""


def test_sigint_during_generate_rolls_back_and_a_rerun_completes(db, tmp_path):
    args = ["--db", str(db), "generate", "-q", "-w", "flowers", "-w", "insects", "-w", "pleasant", "-t", "may2019"]
    before = state(db)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "writing"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (1, 130), stderr  # 130 once the top-level handler lands
    assert "Traceback" not in stderr, stderr
    assert state(db) == before  # the two sets written inside the transaction are gone

    r = run(db, *args[2:])
    assert r.exit_code == 0, r.output
    assert "3 sets: 3 new" in r.output
    clean = tmp_path / "clean.duckdb"
    assert run(clean, *args[2:]).exit_code == 0
    for name in ("flowers@may2019", "insects@may2019", "pleasant@may2019"):
        assert current(db, name) == current(clean, name) != []
    assert "3 sets: 0 new, 0 restored, 3 unchanged" in run(db, *args[2:]).output


# 7. Fuzzing: whatever the input, success or one StimkitError line ----------------------

FUZZ = settings(max_examples=100, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
WORDS = {"thing": wordlists.Word("rose", "count_noun", False, "rose", "roses"),
         "person": wordlists.Word("sister", "count_noun", True, "sister", "sisters", "female")}


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(map(toml_value, v)) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


scalar = st.one_of(st.text(max_size=8), st.integers(-3, 3), st.booleans(), st.floats(), st.sampled_from(
    ["count_noun", "name", "adjective", "noun", "male", "female", "", " ", "a@b", "../x", "\ue000", "[/]"]))
value = st.one_of(scalar, st.lists(scalar, max_size=2))
word_text = st.one_of(st.text(max_size=8), st.sampled_from(["rose", "Adam", "sister", "women", " x ", "a\tb"]))
word_entry = st.one_of(word_text, st.lists(scalar, max_size=2), st.fixed_dictionaries(
    {"word": st.one_of(word_text, value)},
    optional={k: value for k in sorted(wordlists.WORD_KEYS - {"word"}) + ["wrod"]}))
list_body = st.one_of(value, st.fixed_dictionaries(
    {"words": st.one_of(value, st.lists(word_entry, max_size=5))},
    optional={k: value for k in sorted(wordlists.LIST_KEYS - {"words"}) + ["wrods"]}))


def toml_file(lists: dict) -> str:
    """Top-level keys first (non-tables: a list that is not a table), then one table per list."""
    plain = [f"{json.dumps(k, ensure_ascii=False)} = {toml_value(b)}\n" for k, b in lists.items() if not isinstance(b, dict)]
    tables = [f"[{json.dumps(k, ensure_ascii=False)}]\n" + "".join(f"{json.dumps(key)} = {toml_value(v)}\n" for key, v in b.items())
              for k, b in lists.items() if isinstance(b, dict)]
    return "".join(plain + tables)


clean_text = st.text(st.characters(categories=["L", "Nd", "Zs", "P", "S"]), min_size=1, max_size=8)
# Mostly valid entries with now and then one odd field: that is what reaches the deeper checks.
plausible_word = st.one_of(clean_text, st.fixed_dictionaries({"word": clean_text}, optional={
    "kind": st.one_of(st.sampled_from(grammar.KINDS), value), "person": st.one_of(st.booleans(), value),
    "gender": st.one_of(st.sampled_from(["male", "female"]), value), "singular": st.one_of(clean_text, value),
    "plural": clean_text}))
plausible_body = st.fixed_dictionaries({"words": st.lists(plausible_word, min_size=1, max_size=4)}, optional={
    "category": st.text(max_size=5), "kind": st.sampled_from(grammar.KINDS), "gender": st.sampled_from(["male", "female"])})
word_list_toml = st.one_of(
    st.text(max_size=60),
    st.dictionaries(st.one_of(st.sampled_from(["flowers", "a", "x@y", "a/b", ".."]), st.text(max_size=6)),
                    list_body, max_size=3).map(toml_file),
    st.dictionaries(st.sampled_from(["flowers", "a", "b"]), plausible_body, min_size=1, max_size=2).map(toml_file),
)


def one_line_or_success(fn):
    try:
        return fn()
    except StimkitError as e:
        assert str(e).strip() and "\n" not in str(e), repr(str(e))
        return None


@FUZZ
@given(text=word_list_toml)
def test_fuzz_word_list_toml(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("fuzz-lists")
    (folder / "fuzz.toml").write_text(text, encoding="utf-8")
    lists = one_line_or_success(lambda: wordlists.load_all(folder))
    event("loaded" if lists else "refused")
    for name in lists or ():
        for tset in ("word", "may2019", "heilman/competent_1-"):
            spec = generate.SetSpec(name, *tset.partition("/")[::2])
            one_line_or_success(lambda spec=spec: generate.render(spec, lists, {}))


jinja_noise = st.lists(st.one_of(st.sampled_from([
    "{{", "}}", "{%", "%}", "{#", "#}", " ", "\n", "word", "|a", "(", ")", "[", "]", "if", "endif", "for", "in",
    "endfor", "set", "=", "import", "as", "macro", "endmacro", "word-less", "-"]), st.text(max_size=3)), max_size=25).map("".join)
atom = st.sampled_from(["word", "text", "singular", "plural", "kind", "person", "gender", "he", "him", "his", "9", "0",
                        "2.5", "'x'", "[1, 2]", "none", "range(3)", "word[:2]", "word[1:]", "s.role(word)",
                        "word.__class__", "undefined_name", "''", "(word)"])
expr = st.tuples(st.lists(atom, min_size=1, max_size=3),
                 st.lists(st.sampled_from([" + ", " - ", " * ", " / ", " ** ", " ~ ", " // ", " % ", " == "]), max_size=2),
                 st.lists(st.sampled_from(["|a", "|article", "|plural", "|singular", "|capfirst", "|length", "|upper",
                                           "|int", "|first", "|join(', ')", "|nosuchfilter"]), max_size=2)
                 ).map(lambda t: "".join(a + (t[1][i] if i < len(t[1]) else " ~ ") for i, a in enumerate(t[0]))
                       .rstrip(" ~") + "".join(t[2]))
literal = st.text(alphabet="abc XY.,'", max_size=6)
piece = st.one_of(literal, expr.map(lambda e: "{{ " + e + " }}"),
                  st.tuples(expr, literal, expr).map(lambda t: f"{{% if {t[0]} %}}{t[1]}{{{{ {t[2]} }}}}{{% endif %}}"))
line = st.lists(piece, max_size=4).map("".join)
template_text = st.one_of(jinja_noise, st.lists(st.one_of(line, st.sampled_from([
    '{% import "heilman/_script.j2" as s %}', '{% set n = 3 %}', "{# word-less #}", "{# a comment #}", ""])),
    max_size=4).map("\n".join))


@FUZZ
@given(text=template_text)
def test_fuzz_template_text(tmp_path_factory, text):
    root = tmp_path_factory.mktemp("fuzz-templates")
    (root / "fz").mkdir()
    (root / "fz" / "default.j2").write_text(text, encoding="utf-8")
    lists = {k: wordlists.WordList(k, k, "", "", "x", (w,)) for k, w in WORDS.items()}
    for name in lists:
        one_line_or_success(lambda name=name: generate.render(generate.SetSpec(name, "fz"), lists, {"fz": TemplateSet("fz", root)}))


# Rich markup in data and arguments ------------------------------------------------------

def test_markup_in_names_and_words_prints_as_written(tmp_path):
    db = tmp_path / "m.duckdb"
    d = tmp_path / "mine"
    write(d, "mine.toml", '["odd[bold]"]\nwords = ["[/]x", ":x:"]\n')
    r = run(db, "generate", "--wordlist-dir", d, "-t", "word")
    assert r.exit_code == 0, r.output
    assert "odd[bold]@word" in r.output
    assert current(db, "odd[bold]@word") == [("[/]x", 0, 4), (":x:", 0, 3)]
    src = tmp_path / "published"
    src.mkdir()
    shutil.copy(REFERENCE / "weat1.jsonl", src / ":x:[red].jsonl")
    r = run(db, "import", "sentbias", src)
    assert r.exit_code == 0, r.output
    assert "import::x:[red]" in r.output and "\u274c" not in r.output
    r = run(db, "export", "sentbias", tmp_path / "out[bold]", "--test", "import::x:[red]")
    assert r.exit_code == 0, r.output
    assert f"wrote 1 files to {tmp_path / 'out[bold]'}" in r.output
    assert (tmp_path / "out[bold]" / "import::x:[red].jsonl").exists()


# ------------------------------------------------------------------------ the formats, documented in full

def section(doc: str, heading: str) -> str:
    """The text of a README section, from its heading to the next heading of any level."""
    start = doc.index(f"\n{heading}\n")
    following = re.search(r"\n#+ ", doc[start + 1:])
    return doc[start:start + 1 + following.start()] if following else doc[start:]


def documented_keys(text: str) -> set[str]:
    return set(re.findall(r"^\| `([a-z_]+)` \|", text, re.M))


def toml_blocks(doc: str) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", doc, re.S)


def test_every_word_list_key_is_documented_and_every_documented_key_accepted(tmp_path):
    doc = (REPO / "wordlists" / "README.md").read_text()
    assert documented_keys(section(doc, "## List keys")) == wordlists.LIST_KEYS
    assert documented_keys(section(doc, "## Word keys")) == wordlists.WORD_KEYS
    kinds = section(doc, "## Kinds")
    assert all(f"`{k}`" in kinds for k in grammar.KINDS)
    blocks = toml_blocks(doc)
    example = blocks[0]
    for key in wordlists.WORD_KEYS - {"word"}:  # an example of every per-word key
        assert re.search(rf"\{{ word = [^}}]*\b{key} = ", example), key
    parsed = {}
    for i, block in enumerate(blocks):  # every example is accepted as written
        folder = tmp_path / f"block{i}"
        folder.mkdir()
        if block.lstrip().startswith("["):
            (folder / "lists.toml").write_text(block)
            parsed.update(wordlists.load_all(folder))
        else:
            (folder / "_lexicon.toml").write_text(block)
            assert set(wordlists.load_lexicon(folder)) == {"adjective", "mass_noun", "plural_count_noun"}
    words = {w.text: w for w in parsed["care_occupations"].words}
    assert (words["nurse"].kind, words["nurse"].person) == ("count_noun", True)
    assert (words["social worker"].kind, words["Florence Nightingale"].kind) == ("count_noun", "name")
    assert words["nanny"].gender == "female" and words["midwife"].plural == "midwives"
    assert (words["staff"].singular, words["staff"].plural) == ("staff member", "staff")
    assert (words["babysitting"].kind, words["babysitting"].person) == ("mass_noun", False)
    assert [w.text for w in parsed["winobias_male"].words] == ["construction", "worker", "ceo", "janitor"]


def test_every_template_variable_filter_and_set_key_is_documented():
    from stimkit.stimuli import template_sets
    from stimkit.stimuli.templates import context_for, make_environment

    doc = (REPO / "templates" / "README.md").read_text()
    variables = doc[doc.index("Variables:"):doc.index("Filters:")]
    gendered = wordlists._resolve_word({"word": "nurse", "gender": "female"}, {}, wordlists.load_lexicon(), "x")
    assert all(f"`{v}`" in variables or f"`{v}`" in doc for v in context_for(gendered)), context_for(gendered)
    filters = doc[doc.index("Filters:"):doc.index("A line that renders to nothing")]
    custom = set(make_environment([REPO / "templates"]).filters) - set(__import__("jinja2").Environment().filters)
    assert custom and all(f"`{f}`" in filters for f in custom), custom
    table = doc[doc.index("| key | value |"):doc.index("An unknown key")]
    assert documented_keys(table) == set(template_sets.SET_KEYS)
    blocks = toml_blocks(doc)
    assert blocks and all(set(tomllib.loads(block)) <= set(template_sets.SET_KEYS) for block in blocks)


def test_templates_lists_every_set_with_the_description_kept_in_its_folder(tmp_path):
    """`stimkit templates`: yours first, then every built-in set, each with the line of its
    `_set.toml`; the file renders nothing, so it changes no version and replaces no built-in set."""
    from stimkit.stimuli import template_sets

    mine = tmp_path / "templates"
    shutil.copytree(REPO / "examples" / "care-tech" / "templates", mine)
    shutil.copytree(REPO / "templates" / "word", mine / "word")
    (mine / "word" / "_set.toml").write_text('description = "my words"\ngrammar = "may2019"\n')  # only its description differs
    r = runner.invoke(app, ["templates", "--template-dir", str(mine), "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = {row["set"]: row for row in json.loads(r.stdout)}
    builtin = sorted(p.name for p in (REPO / "templates").iterdir() if p.is_dir())
    assert list(rows)[:2] == ["word", "workplace"] and set(rows) == set(builtin) | {"workplace"}
    for name in builtin:
        if name != "word":
            described = template_sets.info(REPO / "templates" / name)["description"]
            assert rows[name]["description"] == described and described and rows[name]["source"] == "built-in"
    assert rows["word"]["source"] == "yours (replaces the built-in set)" and rows["word"]["description"] == "my words"
    assert rows["workplace"]["source"] == "yours" and rows["word_first"]["inherits"] == "may2019"
    assert rows["may2019"]["files"].split() == sorted(p.stem for p in (REPO / "templates" / "may2019").glob("*.j2"))
    # no version changes with the description, and yours is no override of the built-in set
    lists = wordlists.load_all()
    spec = generate.SetSpec("flowers", "word")
    from stimkit.stimuli.templates import load_set
    assert generate.render(spec, lists, {"word": load_set("word", mine)}).version == \
        generate.render(spec, lists, {"word": load_set("word")}).version
    (mine / "word" / "_set.toml").write_text('description = "my words"\ngrammar = "inflect"\n')  # a grammar renders
    with pytest.raises(StimkitError, match="would replace the built-in set"):
        load_set("word", mine)
    (mine / "word" / "_set.toml").write_text('description = "my words"\nlanguages = "en"\n')
    r = runner.invoke(app, ["templates", "--template-dir", str(mine)])
    assert r.exit_code == 1 and f"{mine / 'word' / '_set.toml'}: unknown key 'languages'" in r.output
