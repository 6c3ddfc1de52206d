"""Hostile input (issue 22): one table of bad inputs per command. Each must end in one line
on stderr (never `internal error`), the exit code of its error class, and a store whose
every row is as it was; plus the findings of the issue, each a test of its own, and a
bounded property-based fuzz of word lists, templates, SQL set selectors and import files."""

import json
import os
import unicodedata
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import stimkit
from stimkit import StimkitError, store
from stimkit.cli import app
from stimkit.encoders.base import file_identity
from stimkit.encoders.imported import read_vectors
from stimkit.errors import StoreError
from stimkit.stimuli import generate, wordlists
from stimkit.stimuli.limits import Limits
from stimkit.stimuli.templates import TemplateSet
from stimkit.store import usersql

from conftest import snapshot

runner = CliRunner()
FUZZ = settings(max_examples=15, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
ONE_WORD_LIST = '[mine]\nwords = ["apple", "pear"]\n'


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """A small store: the sets of weat1 and weat7 and one result of each (for results and report)."""
    path = tmp_path_factory.mktemp("hostile") / "store.duckdb"
    with stimkit.open(path) as s:
        s.generate(["flowers", "insects", "pleasant", "unpleasant", "math", "arts", "male_terms", "female_terms"],
                   ["word"])
        s.test(["weat1"], encoders=["glove-6b-50d"], budget=1000)
    return path


def digest(path: Path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return snapshot(con)
    finally:
        con.close()


def make(tmp: Path, files: dict) -> None:
    """Files of a case: text, bytes, or ("link", target) for a symlink."""
    for name, content in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, tuple):
            p.symlink_to(content[1].replace("{tmp}", str(tmp)))
        elif isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


def cli(*args, env=None):
    return runner.invoke(app, [str(a) for a in args], env=env)


def check(db_path, tmp, args, code, files=None, message=None, env=None):
    make(tmp, files or {})
    before = digest(db_path)
    r = cli("--db", db_path, *[str(a).replace("{tmp}", str(tmp)) for a in args], env=env)
    lines = r.output.strip().splitlines()
    assert r.exit_code == code, r.output
    # `error: ...`, or the runner's `failed: test ..., encoder ...: ...` for one test that could not run
    assert len(lines) == 1 and lines[0].startswith(("error: ", "failed: ")), r.output
    assert "internal error" not in r.output, r.output
    if message:
        assert message in r.output, r.output
    assert digest(db_path) == before


def param(command, args, code, files=None, message=None, env=None, marks=(), id=None):
    return pytest.param(command, args, code, files, message, env, marks=marks, id=f"{command}:{id}")


# ----------------------------------------------------------------------------------- generate
def W(body, id, message=None, code=1, extra=()):
    """A word list of one's own, generated under the `word` templates."""
    files = {"wl/a.toml": body} if isinstance(body, (str, bytes)) else body
    return param("generate", ["generate", "--wordlist-dir", "{tmp}/wl", "-t", "word", *extra], code, files, message, id=id)


def T(template, id, message=None, code=1, extra=(), more=None, env=None):
    """A template set `evil` of one's own, with one file default.j2, over the list `mine`."""
    files = {"wl/a.toml": ONE_WORD_LIST, "tp/evil/default.j2": template, **(more or {})}
    return param("generate", ["generate", "--wordlist-dir", "{tmp}/wl", "--template-dir", "{tmp}/tp", "-t", "evil",
                              *extra], code, files, message, env=env, id=id)


def word(w):
    return f"[mine]\nwords = [{json.dumps(w)}]\n"


INVISIBLE = {"zero-width-space": "\u200b", "zwnj": "\u200c", "zwj": "\u200d", "bom": "\ufeff", "rlm": "\u200f",
             "lrm": "\u200e", "lre": "\u202a", "rlo": "\u202e", "soft-hyphen": "\u00ad", "word-joiner": "\u2060",
             "line-sep": "\u2028", "para-sep": "\u2029", "bell": "\x07", "escape": "\x1b", "del": "\x7f",
             "nel": "\x85", "tab": "\t", "newline": "\n", "marker-open": "\ue000", "marker-close": "\ue001"}

GENERATE = [
    *[W(word(f"ab{c}cd"), f"word-holds-{name}", "U+") for name, c in INVISIBLE.items()],
    W('[mine]\nwords = ["caf\u00e9", "cafe\u0301"]\n', "nfc-nfd-duplicate", "duplicate word 'café'"),
    W('[mine]\nwords = ["apple", "apple"]\n', "duplicate", "duplicate word"),
    W('[mine]\nwords = ["apple", " apple "]\n', "duplicate-after-strip", "duplicate word"),
    W('[mine]\nwords = ["Ä", "A\u0308"]\n', "nfc-duplicate-umlaut", "duplicate word"),
    W('[mine]\nwords = ["x", {word = "x\u0301", singular = "a\u200bb"}]\n', "form-zero-width", "U+200B"),
    W("[mine\nwords = [", "bad-toml", "not valid TOML"),
    W("[mine]\nwords = []\n", "empty-words", "empty word list"),
    W('[mine]\nwords = "apple"\n', "words-not-list", "empty word list"),
    W("[mine]\nwords = [3]\n", "word-int", "must be a string or a table"),
    W('[mine]\nwords = [""]\n', "word-empty", "empty word"),
    W('[mine]\nwords = ["   "]\n', "word-blank", "empty word"),
    W('[mine]\nwords = [{kind = "count_noun"}]\n', "table-without-word", "empty word"),
    W('[mine]\ncolour = "red"\nwords = ["a"]\n', "unknown-list-key", "unknown key 'colour'"),
    W('[mine]\nwords = [{word = "a", colour = "red"}]\n', "unknown-word-key", "unknown key 'colour'"),
    W('[mine]\nwords = [{word = "a", kind = "nonsense"}]\n', "unknown-kind", "unknown kind"),
    W('[mine]\nwords = [{word = "a", person = "yes"}]\n', "person-not-bool", "`person` must be true or false"),
    W('[mine]\nwords = [{word = "a", gender = "other"}]\n', "unknown-gender", "unknown gender"),
    W('[mine]\nwords = [{word = "a", singular = ""}]\n', "singular-empty", "singular and plural"),
    W('[mine]\nwords = [{word = "a", plural = 3}]\n', "plural-int", "singular and plural"),
    W('[mine]\ncategory = 3\nwords = ["a"]\n', "category-not-string", "`category` must be a string"),
    W('[mine]\ndrop = ["b"]\nwords = ["a"]\n', "drop-absent", "drop names 'b'"),
    W('[mine]\ndrop = "a"\nwords = ["a", "c"]\n', "drop-not-list", "`drop` must be a list"),
    W('[mine]\nsplit = true\nwords = [{word = "a"}]\n', "split-tables", "plain string words"),
    W('["a/b"]\nwords = ["x"]\n', "list-name-slash", "path separator"),
    W('["a@b"]\nwords = ["x"]\n', "list-name-at", "has one of @"),
    W('[".."]\nwords = ["x"]\n', "list-name-dotdot", "path separator"),
    W("mine = 3\n", "list-not-table", "expected a table"),
    W(b'[mine]\nwords = ["caf\xe9"]\n', "not-utf8", "not UTF-8"),
    W({"wl/a.toml": ONE_WORD_LIST, "wl/b.toml": ONE_WORD_LIST}, "list-defined-twice", "defined twice"),
    W({"wl/a.toml": ("link", "/etc/hostname")}, "symlink-to-etc", "leads outside"),
    W({"wl/a.toml": ONE_WORD_LIST, "wl/b.toml": ("link", "{tmp}/outside.toml"), "outside.toml": '[other]\nwords = ["x"]\n'},
      "symlink-outside-folder", "leads outside"),
    W({"wl/_lexicon.toml": ("link", "/etc/hostname"), "wl/a.toml": ONE_WORD_LIST}, "lexicon-symlink", "leads outside"),
    W({"wl/_lexicon.toml": "[[[", "wl/a.toml": ONE_WORD_LIST}, "lexicon-bad-toml", "not valid TOML"),
    W({"wl/_lexicon.toml": "count_noun = 3\n", "wl/a.toml": ONE_WORD_LIST}, "lexicon-not-list", "must be a list of words"),
    W({"wl/readme.txt": "no lists here"}, "folder-without-lists", "no word-list files"),
    W({"wl/_lexicon.toml": "count_noun = []\n"}, "folder-only-lexicon", "no word-list files"),
    param("generate", ["generate", "--wordlist-dir", "/etc"], 1, message="/etc: no word-list files", id="wordlist-dir-etc"),
    # a missing folder is a mistyped flag: exit 2, as a missing catalog or study folder (issue 38)
    param("generate", ["generate", "--wordlist-dir", "{tmp}/nowhere"], 2, message="no such word-list folder", id="wordlist-dir-missing"),
    param("generate", ["generate", "--wordlist-dir", "{tmp}/f.toml"], 2, {"f.toml": ONE_WORD_LIST}, "no such word-list folder",
          id="wordlist-dir-is-file"),
    param("generate", ["generate", "-w", "no_such_list"], 1, message="unknown word list", id="unknown-list"),
    param("generate", ["generate", "-w", "flowers", "-t", "no_such_set"], 1, message="unknown template set", id="unknown-set"),
    param("generate", ["generate", "-w", "flowers", "-t", "../etc"], 1, message="path separator", id="set-dotdot"),
    param("generate", ["generate", "-w", "flowers", "-t", "word/no_file"], 1, message="no template file", id="unknown-file"),
    param("generate", ["generate", "--template-dir", "{tmp}/nowhere", "-w", "flowers"], 2, message="no such template folder",
          id="template-dir-missing"),
    T("{% include 'evil/_host.j2' %} {{ word }}", "include-symlink-etc", "leads outside",
      more={"tp/evil/_host.j2": ("link", "/etc/hostname")}),
    T("{% include 'evil/host' %} {{ word }}", "include-symlink-no-suffix", "leads outside",
      more={"tp/evil/host": ("link", "/etc/hostname")}),
    T("{% from 'evil/_m.j2' import m %}\n{{ m() }} {{ word }}", "import-symlink-outside", "leads outside",
      more={"tp/evil/_m.j2": ("link", "{tmp}/m.j2"), "m.j2": "{% macro m() %}x{% endmacro %}"}),
    T("{{ word }}", "template-file-symlink", "leads outside", more={"tp/evil/default.j2": ("link", "/etc/hostname")}),
    T("{{ word }}", "base-symlink", "leads outside", more={"tp/evil/_base": ("link", "/etc/hostname")}),
    T("{{ word }}", "base-loop", "loop", more={"tp/evil/_base": "evil"}),
    T("{{ word }}", "base-unknown", "unknown template set", more={"tp/evil/_base": "nothing_here"}),
    T("{% include name %} {{ word }}", "include-computed-name", "computed at render time"),
    T("{% include 'evil/' ~ text %} {{ word }}", "include-concatenated-name", "computed at render time"),
    T("{% include 'evil/_absent.j2' %} {{ word }}", "include-missing", "missing file"),
    T("{% if %}{{ word }}", "syntax-error", "syntax error"),
    T("{{ word }} {{ nothing }}", "undefined", "undefined"),
    T("a sentence without it", "wordless", "does not contain the word"),
    T("{{ word }} {% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
      "nested-loops-long-sentence", "over 2000 characters"),
    T("{{ word }} {% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
      "nested-loops-no-output", "took over 0.5 s", extra=["--max-render-seconds", "0.5"]),
    T("{{ word }} {{ 'ab' * 100000 }}", "repeat", "over 10000"),
    T("{{ word }} {{ 2 ** 100000 }}", "exponent", "exponent"),
    T("{{ word }} {{ 1 / 0 }}", "division-by-zero", "ZeroDivisionError"),
    T("{{ word }} {{ ''.__class__.__mro__ }}", "sandbox-escape", "evil/default:1"),
    T("{{ word }} {{ range(10**9) | list }}", "huge-range", "evil/default:1"),
    T("{{ word }} and more words", "sentence-chars-option", "over 10 characters", extra=["--max-sentence-chars", "10"]),
    T("{{ word }}\nthe {{ word }}", "per-template-option", "over 1 sentences", extra=["--max-per-template", "1"]),
    T("{{ word }}\nthe {{ word }}", "per-set-option", "over 2 sentences", extra=["--max-per-set", "2"]),
    T("{{ word }} and more words", "sentence-chars-env", "STIMKIT_MAX_SENTENCE_CHARS", env={"STIMKIT_MAX_SENTENCE_CHARS": "10"}),
    T("{{ word }}", "limit-env-not-a-number", "STIMKIT_MAX_PER_SET must be a number", env={"STIMKIT_MAX_PER_SET": "lots"}),
    T("{{ word }}", "limit-option-zero", "--max-sentence-chars", code=2, extra=["--max-sentence-chars", "0"]),
    T("", "empty-template-file", "no templates"),
    T("{% if false %}{{ word }}{% endif %}", "renders-empty", "renders empty"),
    T("{{ word }}", "set-folder-symlink-outside", "leads outside",
      more={"tp/evil/default.j2": "{{ word }}", "tp/link": ("link", "{tmp}/elsewhere"), "elsewhere/default.j2": "{{ word }}"},
      extra=["-t", "link"]),
]

# ------------------------------------------------------------------------ import (sentbias, vectors)
SENTBIAS_OK = {k: {"category": k, "examples": ["a", "b"]} for k in ("targ1", "targ2", "attr1", "attr2")}


def S(files, id, message=None, code=1, extra=()):
    return param("import", ["import", "sentbias", "{tmp}/in", *extra], code, files, message, id=f"sentbias-{id}")


def broken(**change):
    data = json.loads(json.dumps(SENTBIAS_OK))
    data.update(change)
    return json.dumps(data)


def V(content, id, message=None, suffix="csv"):
    return param("import", ["encode", "-e", f"import:{{tmp}}/v.{suffix}", "--all"], 1,
                 {f"v.{suffix}": content}, message, id=f"vectors-{id}")


def parquet(frame: pl.DataFrame) -> bytes:
    import io
    buf = io.BytesIO()
    frame.write_parquet(buf)
    return buf.getvalue()


IMPORT = [
    S({"in/x.txt": "nothing"}, "no-files", "no .jsonl or .json files"),
    S({}, "missing-folder", "no .jsonl or .json files"),
    S({"in/t.jsonl": "{"}, "bad-json", "not valid JSON"),
    S({"in/t.jsonl": ""}, "empty-file", "not valid JSON"),
    S({"in/t.jsonl": "[1, 2]"}, "json-list", "missing or empty"),
    S({"in/t.jsonl": broken(targ1=None)}, "missing-targ1", "missing or empty 'targ1'"),
    S({"in/t.jsonl": broken(attr2={"category": "x", "examples": []})}, "empty-examples", "missing or empty 'attr2'"),
    S({"in/t.jsonl": broken(attr1={"category": "x", "examples": [1]})}, "example-int", "non-string example"),
    S({"in/t.jsonl": broken(attr1={"category": "x", "examples": ["  "]})}, "example-blank", "non-string example"),
    S({"in/t.jsonl": broken(targ2={"category": 3, "examples": ["a"]})}, "category-int", "category that is not a string"),
    S({"in/t.jsonl": broken(targ2={"category": "x", "examples": "ab"})}, "examples-string", "missing or empty"),
    S({"in/t.jsonl": b'{"targ1": "\xff"}'}, "not-utf8", "not UTF-8"),
    S({"in/t.jsonl": broken(attr1={"category": "x", "examples": ["a caf\u00e9.", "a cafe\u0301."]})}, "example-nfc-twice",
      "'attr1' example 2 'a caf\u00e9.' repeats example 1 (after Unicode NFC normalisation)"),
    S({"in/t.jsonl": broken(attr1={"category": "x", "examples": ["a\u200bb."]})}, "example-zero-width",
      "'attr1' example 1: example 'a\\u200bb.' holds the character U+200B (zero width space)"),
    S({"in/t.jsonl": broken(targ1={"category": "x", "examples": ["ok.", "tab\there."]})}, "example-control",
      "'targ1' example 2: example 'tab\\there.' holds the character U+0009"),
    S({"in/ok.jsonl": json.dumps(SENTBIAS_OK), "in/z.jsonl": "{"}, "second-file-bad", "not valid JSON"),
    S({"in/t.jsonl": json.dumps(SENTBIAS_OK)}, "prefix-slash", "path separator", extra=["--prefix", "a/"]),
    S({"in/weat1.jsonl": json.dumps(SENTBIAS_OK)}, "replaces-catalog", "would replace the catalog test", extra=["--prefix", ""]),
    V("text,vector\n", "header-only", "no rows"),
    V("", "empty-file", "cannot read"),
    V("word,vector\na,[1]\n", "no-text-column", "needs a `text` column"),
    V("text\napple\n", "text-only", "no vector"),
    V("text,vector\n1,[1]\n2,[2]\n", "text-int", "must hold strings"),
    V('text,vector\napple,"[1, x]"\n', "vector-not-numbers", "not a list of numbers"),
    V('text,vector\napple,"[1, 2]"\npear,"[1]"\n', "ragged", "has 1 values, row 2 has 2"),
    V('text,vector\napple,"[]"\n', "empty-vector", "empty vector"),
    V('text,vector\napple,"[NaN, 1]"\n', "nan", "NaN or infinite"),
    V('text,vector\napple,"[1e40, 1]"\n', "beyond-float32", "NaN or infinite"),
    V('text,vector\napple,"[1, 2]"\napple,"[1, 2]"\n', "duplicate-text", "duplicate text"),
    V("text,d1,d2\napple,1,x\n", "column-not-numeric", "not numbers"),
    V("text,d1,d2\napple,1,\npear,2,3\n", "missing-value", "no value in column 'd2'"),
    V('text,vector\n"",[1]\n', "empty-text", "empty text"),
    V(b"\x00\x01garbage", "garbage-parquet", "cannot read", suffix="parquet"),
    V(parquet(pl.DataFrame({"text": pl.Series([], dtype=pl.String), "vector": pl.Series([], dtype=pl.List(pl.Float32))})),
      "empty-parquet", "no rows", suffix="parquet"),
    V(parquet(pl.DataFrame({"text": ["a"], "vector": [["x", "y"]]})), "parquet-string-vector", "not a list of numbers",
      suffix="parquet"),
    V(parquet(pl.DataFrame({"text": ["a", "b"], "vector": [[1.0, 2.0], None]})), "parquet-null-vector", "missing vector",
      suffix="parquet"),
    param("import", ["encode", "-e", "import:{tmp}/absent.csv", "--all"], 1, message="no such file", id="vectors-missing"),
]

# -------------------------------------------------------------------------------------- query
QUERY = [
    *[param("query", ["query", sql], 2, message="can only read", id=id) for id, sql in [
        ("copy-to", "COPY (SELECT 42) TO '{tmp}/x.csv'"),
        ("explain-analyze-copy", "EXPLAIN ANALYZE COPY (SELECT 42) TO '{tmp}/x.csv'"),
        ("explain-copy", "EXPLAIN COPY (SELECT 42) TO '{tmp}/x.csv'"),
        ("explain-insert", "EXPLAIN ANALYZE INSERT INTO set_log VALUES ('x', 'y', 99, now())"),
        ("call-enable-logging", "CALL enable_logging(storage='file', storage_path='{tmp}/logs')"),
        ("call-checkpoint", "CALL checkpoint()"),
        ("call-force-checkpoint", "CALL force_checkpoint()"),
        ("pragma-enable-profiling", "PRAGMA enable_profiling"),
        ("pragma-profiling-output", "PRAGMA profiling_output='{tmp}/p.json'"),
        ("pragma-enable-logging", "PRAGMA enable_logging"),
        ("attach", "ATTACH '{tmp}/other.duckdb'"),
        ("detach", "DETACH memory"),
        ("set-logging", "SET logging_storage='file'"),
        ("set-external", "SET enable_external_access=true"),
        ("set-home", "SET home_directory='/tmp'"),
        ("reset", "RESET threads"),
        ("install", "INSTALL httpfs"),
        ("load", "LOAD httpfs"),
        ("create-table", "CREATE TABLE t AS SELECT 1"),
        ("create-macro", "CREATE MACRO m() AS 1"),
        ("insert", "INSERT INTO set_log VALUES ('x', 'y', 99, now())"),
        ("update", "UPDATE results SET effect_size = 0"),
        ("delete", "DELETE FROM results"),
        ("drop", "DROP TABLE results"),
        ("alter", "ALTER TABLE results ADD COLUMN x INT"),
        ("checkpoint", "CHECKPOINT"),
        ("vacuum", "VACUUM"),
        ("export-database", "EXPORT DATABASE '{tmp}/dump'"),
        ("import-database", "IMPORT DATABASE '{tmp}/dump'"),
        ("begin", "BEGIN TRANSACTION"),
        ("use", "USE memory"),
        ("prepare", "PREPARE p AS SELECT 1"),
        ("copy-from", "COPY results FROM '{tmp}/x.csv'"),
    ]],
    param("query", ["query", "--allow-files", "EXPLAIN ANALYZE COPY (SELECT 42) TO '{tmp}/x.csv'"], 2,
          message="can only read", id="allow-files-explain-copy"),
    param("query", ["query", "--allow-files", "COPY (SELECT 42) TO '{tmp}/x.csv'"], 2, message="can only read",
          id="allow-files-copy"),
    param("query", ["query", "--allow-files", "CALL enable_logging(storage='file', storage_path='{tmp}/logs')"], 2,
          message="can only read", id="allow-files-enable-logging"),
    param("query", ["query", "--allow-files", "ATTACH '{tmp}/o.duckdb'"], 2, message="can only read", id="allow-files-attach"),
    param("query", ["query", "EXPLAIN (FORMAT JSON) SELECT 1"], 2, message="Parser Error", id="explain-options"),
    param("query", ["query", "SELECT 1; SELECT 2"], 2, message="one statement at a time", id="two-statements"),
    param("query", ["query", "SELEC 1"], 2, message="syntax error", id="syntax-error"),
    param("query", ["query", "SELECT * FROM no_such_table"], 1, message="query failed", id="unknown-table"),
    param("query", ["query", "SELECT * FROM read_csv('/etc/hostname')"], 1, message="disabled by configuration",
          id="read-file-without-allow"),
    param("query", ["query", "SELECT * FROM enable_logging()"], 1, message="locked", id="select-enable-logging"),
    param("query", ["query", "SELECT * FROM read_text('/etc/hostname')"], 1, message="disabled", id="read-text-without-allow"),
    param("query", ["query", "SELECT $x"], 1, message="query failed", id="missing-param"),
    param("query", ["query", "SELECT 1", "--param", "novalue"], 2, id="param-without-value"),
]

# ------------------------------------------------------------------------ test, wefat, audit, results, report
RUN_LAYER = pytest.mark.xfail(strict=False, reason="run layer: options")
TEST = [
    param("test", ["test", "no-such-test"], 2, message="no-such-test", id="unknown-test"),
    param("test", ["test", "weat1", "-e", "no-such-encoder"], 1, message="no-such-encoder", id="unknown-encoder"),
    param("test", ["test", "weat1", "--method", "magic"], 2, message="magic", id="unknown-method"),
    param("test", ["test", "weat1", "--alternative", "sideways"], 2, message="sideways", id="unknown-alternative"),
    param("test", ["test", "weat1", "--balance", "shuffle"], 2, message="shuffle", id="unknown-balance"),
    param("test", ["test", "weat1", "--context", "paragraph"], 2, message="paragraph", id="unknown-context"),
    param("test", ["test", "weat1", "--budget", "0"], 2, message="budget", id="budget-zero"),
    param("test", ["test", "weat1", "--cuts", "0"], 2, message="--cuts", id="cuts-zero"),
    param("test", ["test", "--x", "flowers@word", "--y", "insects@word", "--a", "pleasant@word"], 2, message="--b",
          id="adhoc-missing-b"),
    param("test", ["test", "--x", "DROP TABLE results", "--y", "insects@word", "--a", "pleasant@word",
                   "--b", "unpleasant@word"], 1, id="adhoc-sql-drop"),
    param("test", ["test", "--x", "no_such@word", "--y", "insects@word", "--a", "pleasant@word",
                   "--b", "unpleasant@word"], 1, id="adhoc-unknown-set"),
    param("test", ["test", "weat1", "--cuts", "100000000"], 2, message="--cuts", id="cuts-huge"),
]
WEFAT = [
    param("wefat", ["wefat", "no-such-wefat"], 2, message="no-such-wefat", id="unknown"),
    param("wefat", ["wefat", "wefat-occupations", "-e", "no-such-encoder"], 1, message="no-such-encoder", id="unknown-encoder"),
    param("wefat", ["wefat", "--targets", "flowers", "--a", "pleasant"], 2, id="adhoc-missing-b"),
    param("wefat", ["wefat", "--targets", "flowers", "--a", "pleasant", "--b", "unpleasant", "--property",
                    "{tmp}/absent.csv"], 1, id="property-file-missing"),
    param("wefat", ["wefat", "--targets", "flowers", "--a", "pleasant", "--b", "unpleasant", "--property",
                    "DELETE FROM results"], 1, id="property-sql-delete"),
    param("wefat", ["wefat", "wefat-occupations", "--method", "magic"], 2, message="magic", id="unknown-method"),
    param("wefat", ["wefat", "wefat-occupations", "--drop-least-typical", "2"], 2, id="drop-over-one"),
    param("wefat", ["wefat", "wefat-occupations", "--bootstrap", "-1"], 2, message="--bootstrap",
          id="bootstrap-negative"),
]
AUDIT = [
    param("audit", ["audit", "templates", "-t", "no-such-test", "-e", "glove-6b-50d"], 2, message="no-such-test",
          id="unknown-test"),
    param("audit", ["audit", "templates", "-t", "sent-weat6", "-s", "no_such_set", "-e", "glove-6b-50d"], 1,
          message="no_such_set", id="unknown-template-set"),
    param("audit", ["audit", "templates", "-t", "sent-weat6", "-e", "no-such-encoder"], 1, message="no-such-encoder",
          id="unknown-encoder"),
    param("audit", ["audit", "templates", "-t", "sent-weat6", "--alpha", "2", "-e", "glove-6b-50d"], 2, message="alpha",
          id="alpha-over-one"),
    param("audit", ["audit", "templates", "-t", "weat1", "-e", "glove-6b-50d"], 2, message="weat1", id="word-test"),
    param("audit", ["audit", "show", "--where", "DROP TABLE audits"], 2, id="show-where-drop"),
    param("audit", ["audit", "show", "--where", "no_column = 1"], 1, id="show-where-unknown-column"),
    param("audit", ["audit", "show", "--where", "1) UNION SELECT * FROM results --"], 1, id="show-where-injection"),
]
RESULTS = [
    param("results", ["results", "--where", "DROP TABLE results"], 2, id="where-drop"),
    param("results", ["results", "--where", "1; DELETE FROM results"], 2, id="where-two-statements"),
    param("results", ["results", "--where", "no_column = 1"], 1, id="where-unknown-column"),
    param("results", ["results", "--where", "test = "], 2, id="where-syntax"),
    param("results", ["results", "--correct", "bonferonni"], 2, message="bonferonni", id="unknown-correction"),
    param("results", ["results", "--alpha", "0"], 2, message="alpha", id="alpha-zero"),
    param("results", ["results", "--alpha", "1.5"], 2, message="alpha", id="alpha-over-one"),
    param("results", ["results", "--layout", "sideways"], 2, message="sideways", id="unknown-layout"),
    param("results", ["results", "--run", "no-such-run"], 2, id="unknown-run"),
    param("results", ["wefat-results", "--where", "DELETE FROM wefat_results"], 2, id="wefat-where-delete"),
    param("results", ["check", "--where", "DROP TABLE results"], 2, id="check-where-drop"),
]
REPORT = [
    param("report", ["report", "-o", "{tmp}/r", "--format", "gif"], 2, message="unknown format", id="unknown-format"),
    param("report", ["report", "-o", "{tmp}/r", "--correct", "bonferonni"], 2, message="bonferonni", id="unknown-correction"),
    param("report", ["report", "-o", "{tmp}/r", "--where", "DROP TABLE results"], 2, id="where-drop"),
    param("report", ["report", "-o", "{tmp}/r", "--where", "no_column = 1"], 1, message="--where", id="where-unknown-column"),
    param("report", ["report", "-o", "{tmp}/r", "--test", "no-such-test"], 1, message="no result", id="unknown-test"),
    param("report", ["report", "-o", "{tmp}/f"], 1, {"f": "a file"}, "not a folder", id="out-is-file"),
    param("report", ["report", "-o", "{tmp}/r", "--format", "html"], 1, {"r/notes.txt": "mine"}, "not empty",
          id="not-empty-without-force"),
    param("report", ["report", "-o", "{tmp}/r", "--format", "html", "--force"], 1, {"r/figures/mine.svg": "<svg/>"},
          "not written by stimkit report", id="force-user-figure"),
    param("report", ["report", "-o", "{tmp}/r", "--format", "html", "--force"], 1, {"r/tables/mine.csv": "a\n"},
          "not written by stimkit report", id="force-user-table"),
    param("report", ["report", "-o", "{tmp}/r", "--format", "html", "--force"], 1, {"r/report.html": "<p>mine</p>"},
          "not written by stimkit report", id="force-user-report-html"),
    param("report", ["report", "-o", "{tmp}/r", "--format", "html", "--force"], 1,
          {"r/figures": ("link", "{tmp}/elsewhere"), "elsewhere/keep.svg": "<svg/>"}, "not written by stimkit report",
          id="force-figures-symlink"),
    param("report", ["report", "-o", "{tmp}/r", "--alpha", "0"], 2, message="alpha", id="alpha-zero"),
]

CASES = GENERATE + IMPORT + QUERY + TEST + WEFAT + AUDIT + RESULTS + REPORT


def test_suite_is_large_enough():
    assert len(CASES) >= 150
    assert {c.values[0] for c in CASES} == {"generate", "import", "query", "test", "wefat", "audit", "results", "report"}


@pytest.mark.parametrize("command, args, code, files, message, env", CASES)
def test_hostile(db, tmp_path, command, args, code, files, message, env):
    check(db, tmp_path, args, code, files, message, env)
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "logs").exists() and not (tmp_path / "p.json").exists()


# ------------------------------------------------------------------------------ the findings
def test_explain_analyze_copy_writes_no_host_file(db, tmp_path):
    """Finding: `query --allow-files "EXPLAIN ANALYZE COPY ... TO 'x.csv'"` wrote x.csv."""
    r = cli("--db", db, "query", "--allow-files", f"EXPLAIN ANALYZE COPY (SELECT 42) TO '{tmp_path}/x.csv'")
    assert r.exit_code == 2 and not (tmp_path / "x.csv").exists(), r.output


def test_enable_logging_is_one_line_not_an_abort(db, tmp_path):
    """Finding: `CALL enable_logging(storage='file', ...)` aborted the process (exit 134).
    Both the statement allow-list and DuckDB's locked configuration refuse it."""
    sql = f"CALL enable_logging(storage='file', storage_path='{tmp_path}/logs')"
    r = cli("--db", db, "query", sql)
    assert r.exit_code == 2 and r.output.count("\n") == 1 and not (tmp_path / "logs").exists(), r.output
    con = store.connect(db, read_only=True)
    try:
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute(sql)
    finally:
        con.close()


def test_reading_files_still_works_with_allow_files(db, tmp_path):
    (tmp_path / "in.csv").write_text("a,b\n1,2\n")
    r = cli("--db", db, "query", "--allow-files", f"SELECT a + b AS s FROM read_csv('{tmp_path}/in.csv')", "--format", "csv")
    assert r.exit_code == 0 and r.stdout.strip().splitlines() == ["s", "3"], r.output


@pytest.mark.parametrize("sql", ["PRAGMA show_tables", "EXPLAIN SELECT 1", "EXPLAIN ANALYZE SELECT count(*) FROM results",
                                 "CALL pragma_version()", "SELECT name FROM duckdb_settings() LIMIT 1",
                                 "PIVOT (SELECT test, encoder, effect_size FROM results) ON encoder USING first(effect_size)"])
def test_reading_statements_pass(db, sql):
    r = cli("--db", db, "query", sql)
    assert r.exit_code == 0, r.output


def test_include_of_a_symlink_outside_is_refused(tmp_path):
    """Finding: a template `{% include %}` of a link to /etc/hostname put the machine's name in every sentence."""
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "_host.j2").symlink_to("/etc/hostname")
    (tmp_path / "evil" / "default.j2").write_text("{% include 'evil/_host.j2' %} {{ word }}")
    lists = {"mine": wordlists.WordList("mine", "mine", "", "", "x", (wordlists._resolve_word("apple", {}, {}, "x"),))}
    with pytest.raises(StimkitError, match="leads outside"):
        generate.render(generate.SetSpec("mine", "evil"), lists, {"evil": TemplateSet("evil", tmp_path)})


def test_wordlist_dir_etc_fails(tmp_path):
    """Finding: `generate --wordlist-dir /etc` exited 0."""
    r = cli("--db", tmp_path / "s.duckdb", "generate", "--wordlist-dir", "/etc")
    assert r.exit_code == 1 and "/etc" in r.output and not (tmp_path / "s.duckdb").exists(), r.output


@pytest.mark.parametrize("tables", [
    ["CREATE TABLE accounts (id INT, owner VARCHAR)", "INSERT INTO accounts VALUES (1, 'someone')"],
    ["CREATE TABLE schema_migrations (version INT, name VARCHAR)", "INSERT INTO schema_migrations VALUES (1, 'their_first.sql')"],
], ids=["other-tables", "other-schema-marker"])
def test_foreign_duckdb_file_is_refused_untouched(tmp_path, tables):
    """Finding: `generate` added its tables beside another program's."""
    path = tmp_path / "theirs.duckdb"
    con = duckdb.connect(str(path))
    for sql in tables:
        con.execute(sql)
    con.close()
    before = path.read_bytes()
    for args in (["generate", "-w", "flowers", "-t", "word"], ["sets"], ["results"]):
        r = cli("--db", path, *args)
        assert r.exit_code == 3 and "not a stimkit store" in r.output and r.output.count("\n") == 1, r.output
    assert path.read_bytes() == before
    with pytest.raises(StoreError):
        store.connect(path)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_damaged_store_is_exit_3(db, tmp_path, damage):
    path = tmp_path / "damaged.duckdb"
    data = db.read_bytes()
    path.write_bytes({"truncated": data[: len(data) // 3], "garbage": b"\x13" * 9000, "empty": b""}[damage])
    for args in (["sets"], ["generate", "-w", "flowers", "-t", "word"], ["query", "SELECT 1"]):
        r = cli("--db", path, *args)
        assert r.exit_code == 3 and r.output.count("\n") == 1 and "damaged.duckdb" in r.output, r.output


def test_failed_write_on_a_new_path_leaves_no_file(tmp_path):
    path = tmp_path / "new.duckdb"
    for args in (["generate", "-w", "no_such_list"], ["generate", "--wordlist-dir", "/etc"],
                 ["import", "sentbias", tmp_path / "nothing"]):
        r = cli("--db", path, *args)
        assert r.exit_code != 0 and not path.exists() and not Path(f"{path}.wal").exists(), r.output
        assert list(tmp_path.iterdir()) == [], r.output  # nor the hidden store it was built as


def test_a_new_store_in_a_missing_or_locked_folder_names_the_path(tmp_path):
    missing = tmp_path / "no" / "such" / "s.duckdb"
    r = cli("--db", missing, "generate", "-w", "flowers", "-t", "word")
    assert r.exit_code == 3 and r.output == f"error: {missing}: cannot create a store: no folder {missing.parent}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        r = cli("--db", locked / "s.duckdb", "generate", "-w", "flowers", "-t", "word")
        assert r.exit_code == 3 and r.output == f"error: {locked / 's.duckdb'}: cannot create a store: folder {locked} is not writable\n"
        assert list(locked.iterdir()) == []


def test_report_force_keeps_files_it_did_not_write(db, tmp_path):
    """Finding: `report --force` deleted the user's files in figures/ and tables/."""
    out = tmp_path / "r"
    assert cli("--db", db, "report", "-o", out, "--format", "html").exit_code == 0
    manifest = json.loads((out / ".stimkit-report.json").read_text())
    assert "report.html" in manifest["files"] and any(f.startswith("tables/") for f in manifest["files"])
    assert cli("--db", db, "report", "-o", out, "--format", "html", "--force").exit_code == 0  # its own: replaced
    (out / "figures" / "mine.svg").write_text("<svg/>")
    r = cli("--db", db, "report", "-o", out, "--format", "html", "--force")
    assert r.exit_code == 1 and "mine.svg" in r.output and (out / "figures" / "mine.svg").read_text() == "<svg/>"
    assert (out / "report.html").exists()  # refused before anything was removed
    (out / "figures" / "mine.svg").unlink()
    (out / "tables" / "table4.md").write_text("edited by hand")
    r = cli("--db", db, "report", "-o", out, "--format", "html", "--force")
    assert r.exit_code == 1 and "table4.md" in r.output and (out / "tables" / "table4.md").read_text() == "edited by hand"


def test_nested_loops_are_bounded(tmp_path):
    """Finding: two nested loops rendered a 60,000,000-character sentence (9 s) and stored it.
    The character limit stops it as the output grows: the error names that limit, not the
    render time limit (5 s, which a regression would reach instead), whatever the machine's speed."""
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "default.j2").write_text(
        "{{ word }} {% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}")
    lists = {"mine": wordlists.WordList("mine", "mine", "", "", "x", (wordlists._resolve_word("apple", {}, {}, "x"),))}
    with pytest.raises(StimkitError, match="over 2000 characters"):
        generate.render(generate.SetSpec("mine", "evil"), lists, {"evil": TemplateSet("evil", tmp_path)})
    with pytest.raises(StimkitError, match="took over 0.3 s.*--max-render-seconds"):
        generate.render(generate.SetSpec("mine", "evil"), lists, {"evil": TemplateSet("evil", tmp_path)},
                        limits=Limits(sentence_chars=10**9, render_seconds=0.3))


def test_raised_limit_lets_a_long_sentence_through(tmp_path):
    (tmp_path / "long").mkdir()
    (tmp_path / "long" / "default.j2").write_text("{{ word }} {% for i in range(3000) %}x{% endfor %}")
    lists = {"mine": wordlists.WordList("mine", "mine", "", "", "x", (wordlists._resolve_word("apple", {}, {}, "x"),))}
    with pytest.raises(StimkitError, match="--max-sentence-chars"):
        generate.render(generate.SetSpec("mine", "long"), lists, {"long": TemplateSet("long", tmp_path)})
    r = generate.render(generate.SetSpec("mine", "long"), lists, {"long": TemplateSet("long", tmp_path)},
                        limits=Limits(sentence_chars=5000))
    assert len(r.rows["stimulus"][0]) == len("apple ") + 3000


def test_nfc_and_nfd_are_one_word(tmp_path):
    """Finding: `café` in NFC and in NFD became two items; every word is stored in NFC."""
    (tmp_path / "a.toml").write_text('[one]\nwords = ["cafe\u0301"]\n[two]\nwords = ["caf\u00e9", "cafe\u0301"]\n')
    with pytest.raises(StimkitError, match=r"a.toml:4: list 'two': duplicate word 'café' \(first at line 4\)"):
        wordlists.parse_file(tmp_path / "a.toml")
    (tmp_path / "a.toml").write_text('[one]\nwords = ["cafe\u0301", {word = "A\u0308pfel", plural = "A\u0308pfel"}]\n')
    (wl,) = wordlists.parse_file(tmp_path / "a.toml")
    assert [w.text for w in wl.words] == ["caf\u00e9", "\u00c4pfel"]
    assert all(unicodedata.is_normalized("NFC", f) for w in wl.words for f in (w.text, w.singular, w.plural))


def test_zero_width_space_is_refused_with_its_line(tmp_path):
    """Finding: a word with a zero-width space was accepted."""
    (tmp_path / "a.toml").write_text('[one]\nwords = [\n  "apple",\n  "pe\u200bar",\n]\n')
    with pytest.raises(StimkitError, match=r"a.toml:4: list 'one': word .* U\+200B \(zero width space\)"):
        wordlists.parse_file(tmp_path / "a.toml")


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_empty_import_is_a_message_not_stop_iteration(tmp_path, suffix):
    """Finding: `encode -e import:FILE` with a header and no rows, or an empty parquet, ended in StopIteration."""
    path = tmp_path / f"v.{suffix}"
    if suffix == "csv":
        path.write_text("text,vector\n")
    else:
        pl.DataFrame({"text": pl.Series([], dtype=pl.String), "vector": pl.Series([], dtype=pl.List(pl.Float64))}).write_parquet(path)
    with pytest.raises(StimkitError, match="no rows"):
        read_vectors(path)


def test_cuts_huge_is_refused_fast(db):
    """Finding (run layer): `test weat1 --cuts 100000000` hung."""
    assert _bounded(["test", "weat1", "--cuts", "100000000"], db)


def test_bootstrap_negative_is_a_usage_error(db):
    """Finding (run layer): `wefat wefat-occupations --bootstrap -1` was an internal error."""
    r = cli("--db", db, "wefat", "wefat-occupations", "--bootstrap", "-1")
    assert r.exit_code == 2 and "internal error" not in r.output and "--bootstrap" in r.output


def _bounded(args, db, seconds=300) -> bool:
    """True when the command ends, refusing (a subprocess: a hang is killed). `seconds` only
    tells a hang (hours of cuts) from a loaded machine's start-up."""
    import subprocess
    import sys
    try:
        p = subprocess.run([sys.executable, "-m", "stimkit", "--db", str(db), *args], capture_output=True, timeout=seconds,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    except subprocess.TimeoutExpired:
        return False
    return p.returncode == 2


# ------------------------------------------------------------------------ versions: immutable, complete
def _one_set(tmp_path, templates: dict, words='[mine]\nwords = ["apple", "pear"]\n', lexicon=None):
    (tmp_path / "wl").mkdir(exist_ok=True)
    (tmp_path / "wl" / "a.toml").write_text(words)
    if lexicon is not None:
        (tmp_path / "wl" / "_lexicon.toml").write_text(lexicon)
    for name, text in templates.items():
        (tmp_path / "tp" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tp" / name).write_text(text)
    lists = wordlists.load_all(tmp_path / "wl")
    return generate.render(generate.SetSpec("mine", "own"), lists, {"own": TemplateSet("own", [tmp_path / "tp"])}).version


@pytest.mark.parametrize("edit", ["included-other-set", "included-plain-file", "imported-macro", "word", "lexicon"])
def test_version_covers_everything_rendered(tmp_path, edit):
    files = {"own/default.j2": "{% include 'shared/greeting.j2' %} {% include 'own/plain.j2' %} "
                               "{% from 'lib/_m.j2' import m %}{{ m() }} {{ word }}",
             "shared/greeting.j2": "hello", "own/plain.j2": "there", "lib/_m.j2": "{% macro m() %}so{% endmacro %}"}
    lexicon = 'mass_noun = ["pear"]\n'
    before = _one_set(tmp_path, files, lexicon=lexicon)
    assert _one_set(tmp_path, files, lexicon=lexicon) == before  # unchanged input, same version
    changed = dict(files)
    words, lex = '[mine]\nwords = ["apple", "pear"]\n', lexicon
    if edit == "included-other-set":
        changed["shared/greeting.j2"] = "hullo"
    elif edit == "included-plain-file":
        changed["own/plain.j2"] = "here"
    elif edit == "imported-macro":
        changed["lib/_m.j2"] = "{% macro m() %}os{% endmacro %}"
    elif edit == "word":
        words = '[mine]\nwords = ["apple", "plum"]\n'
    else:
        lex = 'mass_noun = ["apple"]\n'
    assert _one_set(tmp_path, changed, words, lex) != before


def test_vectors_fingerprint_follows_content_with_same_size_and_mtime(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("apple 0.1 0.2\npear 0.3 0.4\n")
    st = os.stat(path)
    first = file_identity(path)
    path.write_text("apple 0.1 0.2\npear 0.3 0.5\n")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same mtime
    assert os.stat(path).st_size == st.st_size and os.stat(path).st_mtime_ns == st.st_mtime_ns
    second = file_identity(path)
    assert first["sha256"] != second["sha256"]
    import hashlib
    assert second["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    from stimkit.encoders import resolve
    enc = resolve(f"vectors:{path}")
    assert enc.identity()["sha256"] == second["sha256"] if "sha256" in enc.identity() else str(second["sha256"]) in json.dumps(enc.details())


def test_reimport_makes_a_new_version_and_keeps_the_old(tmp_path):
    path = tmp_path / "s.duckdb"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "t.jsonl").write_text(json.dumps(SENTBIAS_OK))
    assert cli("--db", path, "import", "sentbias", tmp_path / "in").exit_code == 0
    con = store.connect(path, read_only=True)
    old = dict(store.rows(con, "SELECT name, version FROM current_sets"))
    old_rows = store.rows(con, "SELECT set_version, ordinal, stimulus FROM stimuli ORDER BY ALL")
    con.close()
    changed = json.loads(json.dumps(SENTBIAS_OK))
    changed["targ1"]["examples"] = ["a", "c"]
    (tmp_path / "in" / "t.jsonl").write_text(json.dumps(changed))
    assert cli("--db", path, "import", "sentbias", tmp_path / "in").exit_code == 0
    con = store.connect(path, read_only=True)
    new = dict(store.rows(con, "SELECT name, version FROM current_sets"))
    kept = store.rows(con, f"SELECT set_version, ordinal, stimulus FROM stimuli WHERE set_version IN "
                           f"({', '.join(repr(v) for v in old.values())}) ORDER BY ALL")
    con.close()
    assert new["import:t/targ1"] != old["import:t/targ1"]
    assert {k: v for k, v in new.items() if k != "import:t/targ1"} == {k: v for k, v in old.items() if k != "import:t/targ1"}
    assert kept == old_rows  # the earlier version, row for row, still there for results that point to it


# ------------------------------------------------------------------------------ fuzz (bounded)
WORD = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@FUZZ
@given(st.lists(WORD, min_size=1, max_size=6))
def test_fuzz_word_lists(tmp_path_factory, words):
    """Any list of strings: parsed into clean NFC words, or one StimkitError; never anything else."""
    folder = tmp_path_factory.mktemp("fz")
    (folder / "a.toml").write_text("[mine]\nwords = " + json.dumps(words, ensure_ascii=False) + "\n", encoding="utf-8")
    try:
        (wl,) = wordlists.parse_file(folder / "a.toml")
    except StimkitError as e:
        assert "\n" not in str(e)
        return
    texts = [w.text for w in wl.words]
    assert len(set(texts)) == len(texts)
    for t in texts:
        assert unicodedata.is_normalized("NFC", t) and t == t.strip()
        assert not any(unicodedata.category(c) in wordlists.BAD_CATEGORIES for c in t)


TEMPLATE_BITS = st.sampled_from(["{{ word }}", "{{ word | a }}", "{{ text }}", "{% for i in range(9) %}", "{% endfor %}",
                                 "{% if person %}", "{% endif %}", "{{ 'ab' * 99999 }}", "{{ x }}", "{%", "}}", "the", " ",
                                 "{% include 'own/default.j2' %}", "{% include name %}", "{{ 9 ** 99 }}", "\u200b"])


@FUZZ
@given(st.lists(TEMPLATE_BITS, min_size=1, max_size=8).map("".join))
def test_fuzz_templates(tmp_path_factory, text):
    """Any template text: rendered sentences within the limits, or one StimkitError."""
    folder = tmp_path_factory.mktemp("ft")
    (folder / "own").mkdir()
    (folder / "own" / "default.j2").write_text(text.replace("\n", " "))
    lists = {"mine": wordlists.WordList("mine", "mine", "", "", "x", (wordlists._resolve_word("apple", {}, {}, "x"),))}
    try:
        r = generate.render(generate.SetSpec("mine", "own"), lists, {"own": TemplateSet("own", folder)},
                            limits=Limits(sentence_chars=500, render_seconds=0.5))
    except StimkitError as e:
        assert "\n" not in str(e)
        return
    assert all(len(s) <= 500 for s in r.rows["stimulus"])


SQL_BITS = st.sampled_from(["SELECT", "*", "stimulus", "FROM", "current_stimuli", "WHERE", "set_name", "=", "'flowers@word'",
                            ";", "DROP TABLE results", "COPY", "TO 'x.csv'", "EXPLAIN", "ANALYZE", "(", ")", "UNION",
                            "CALL enable_logging()", "--", "ATTACH 'x'", "read_csv('/etc/hostname')", "1"])


@settings(FUZZ, max_examples=20)
@given(st.lists(SQL_BITS, min_size=1, max_size=8).map(" ".join))
def test_fuzz_sql_set_selectors(db, sql):
    """Any selector text: one SELECT that runs read-only, or a usage/input error; the store is never written."""
    con = store.connect(db, read_only=True)
    try:
        before = snapshot(con)
        try:
            checked = usersql.check_select(sql, "--x")
            usersql.read(con, f"SELECT count(*) FROM ({checked})")
        except StimkitError as e:
            assert "\n" not in str(e)
        try:
            usersql.read(con, usersql.check_reading(sql))
        except StimkitError as e:
            assert "\n" not in str(e)
        assert snapshot(con) == before
    finally:
        con.close()


CELL = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64).map(repr), st.text(max_size=4), st.just(""),
                 st.just("[1, 2]"), st.just("1 2"))


@FUZZ
@given(st.lists(st.tuples(st.text(max_size=5), CELL), max_size=5), st.booleans())
def test_fuzz_import_files(tmp_path_factory, rows, with_header):
    """Any small CSV: a finite float32 matrix with one row per distinct text, or one StimkitError."""
    import csv
    folder = tmp_path_factory.mktemp("fi")
    path = folder / "v.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        if with_header:
            w.writerow(["text", "vector"])
        w.writerows(rows)
    try:
        texts, matrix = read_vectors(path)
    except StimkitError as e:
        assert "\n" not in str(e)
        return
    assert matrix.dtype == np.float32 and np.isfinite(matrix).all() and len(texts) == len(set(texts)) == len(matrix) > 0


@pytest.mark.parametrize("args", [["results", "--format", "xml"], ["check", "--format", "yaml"]])
def test_a_bad_option_value_is_one_line_exit_2_from_the_console_script(db, args, capsys):
    """Click checks some values before a command runs (an unknown --format): the console
    script (`stimkit.cli.main`) still prints one line and exits 2."""
    from stimkit.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--db", str(db), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and args[2] in err[0]
