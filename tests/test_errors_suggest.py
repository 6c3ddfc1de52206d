"""Errors suggest only what works (issue 53): each is one line on stderr, exits 2, and the
command or study key it suggests is then tried and does work."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from stimkit.cli import app
from stimkit.study import study as studies


def invoke(*args, **kwargs):
    return CliRunner().invoke(app, [str(a) for a in args], **kwargs)


def one_line(r) -> str:
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.exit_code == 2 and len(lines) == 1, (r.exit_code, r.stderr)
    return lines[0]


STUDY = 'name = "mine"\ntests = ["weat6"]\n'


@pytest.mark.parametrize("body, key, suggested, fixed", [
    # a key of [options] written at the top, misspelt
    ("budjet = 100\n", "'budjet'", "[options] budget", "[options]\nbudget = 100\n"),
    ("budget = 100\n", "'budget'", "[options] budget", "[options]\nbudget = 100\n"),
    # a key's singular
    ('encoder = "minilm"\n', "'encoder'", "`encoders`", 'encoders = ["minilm"]\n'),
    # K random pairs: the table's key is `sets` (not a Python dict in the message)
    ("[baseline]\nk = 100\n", "'baseline.k'", "[baseline] sets", "[baseline]\nsets = 100\n"),
    ("[options]\nbudjet = 100\n", "'options.budjet'", "[options] budget", "[options]\nbudget = 100\n"),
    ('[table]\nhead = "category"\n', "'table.head'", "[table] heads", '[table]\nheads = "category"\n'),
])
def test_an_unknown_study_key_gets_did_you_mean_and_the_suggestion_works(tmp_path, body, key, suggested, fixed):
    bad = tmp_path / "study.toml"
    bad.write_text(STUDY + body)
    line = one_line(invoke("--study", bad, "run"))
    assert line == f"error: {bad}: unknown key {key} (did you mean {suggested}?)"
    assert "{" not in line  # no Python dict
    good = tmp_path / "good.toml"
    good.write_text(STUDY + fixed)
    studies.load(good)  # the key it suggested is one the study file takes


@pytest.mark.parametrize("body, key, value, expected", [
    ('alpha = "0.05"\n', "alpha", "'0.05'", "a valid number"),
    ('[options]\nbudget = "100"\n', "options.budget", "'100'", "a valid integer"),
    ('checks = "yes"\n', "checks", "'yes'", "a valid boolean"),
    ("override = 1\n", "override", "1", "a valid boolean"),
    ("table = 5\n", "table", "5", "a valid dictionary"),
    ("options = 5\n", "options", "5", "a table of test options"),
])
def test_a_wrong_type_names_the_key_the_value_and_the_type(tmp_path, body, key, value, expected):
    bad = tmp_path / "study.toml"
    bad.write_text(STUDY + body)
    line = one_line(invoke("--study", bad, "run"))
    assert f"`{key}`" in line and f"not {value}" in line and expected in line, line
    assert "instance of" not in line  # pydantic's class names are not the user's


def test_run_help_says_the_study_found_here_else_may_2019():
    r = invoke("run", "--help", terminal_width=200)
    text = re.sub(r"[\s│]+", " ", r.stdout)
    assert "Default: the study found here (study.toml in this folder or the nearest above), else may-2019." in text
    assert "--override" in text and "override = true" in text


@pytest.fixture
def clashing_study(tmp_path):
    """`stimkit init`'s study with its target list renamed `pleasant`, a built-in list's name."""
    folder = tmp_path / "st"
    assert invoke("init", folder).exit_code == 0
    lists = folder / "wordlists" / "food.toml"
    lists.write_text(lists.read_text().replace("[sweets]", "[pleasant]"))
    for f in (folder / "tests" / "food.toml", folder / "study.toml"):
        f.write_text(f.read_text().replace('"sweets', '"pleasant').replace("sweets-", "pleasant-")
                     .replace("budget = 10000", "budget = 300"))
    return folder


def test_a_list_named_like_a_built_in_one_suggests_what_works_in_run(clashing_study, tmp_path):
    study = clashing_study / "study.toml"
    db = tmp_path / "s.duckdb"
    line = one_line(invoke("--db", db, "--study", study, "run"))
    assert "list 'pleasant' would replace the built-in list" in line
    assert "pass --override (a study file: override = true)" in line
    r = invoke("--db", db, "--study", study, "run", "--override", "-f", "csv")  # the flag it names
    assert r.exit_code == 0, r.output
    keyed = clashing_study / "keyed.toml"
    keyed.write_text("override = true\n" + study.read_text())  # the key it names
    assert studies.load(keyed).override is True
    r = invoke("--db", tmp_path / "t.duckdb", "--study", keyed, "run", "-f", "csv")
    assert r.exit_code == 0, r.output
    # and `test`, inside the study: its lists get the same override
    r = invoke("--db", tmp_path / "u.duckdb", "--study", keyed, "test", "pleasant-pleasant", "-q", "-f", "csv")
    assert r.exit_code == 0, r.output


def test_the_override_key_is_a_bool_of_the_study(tmp_path):
    f = tmp_path / "study.toml"
    f.write_text(STUDY + "override = true\n")
    assert studies.load(f).override is True
    f.write_text(STUDY)
    assert studies.load(f).override is False
