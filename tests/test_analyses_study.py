"""The newer analyses inside a study (issue 48): `audit perturb`, `audit ceat`, `debias compare`
and `debias check` take the study's procedure (seed, budget, units, encoders, alpha, per-test
options) through the library's one resolver (run.options.procedure), and store their results
with a run that carries the study, alpha and correction. And their degenerate inputs and
count bounds (issue 49: findings 9, 13, 14, 15)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.cli import app

from conftest import snapshot

# a study whose procedure differs from every default: seed, budget, alpha, and a per-test units
STUDY = """name = "probe"
tests = ["sent-weat10"]
encoders = ["glove-6b-50d"]
alpha = 0.05
correction = "bonferroni"
[options]
seed = 7
budget = 2000
[options."sent-weat10"]
units = "words"
"""


def cli(*args, cwd=None):
    import os

    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return CliRunner().invoke(app, [str(a) for a in args])
    finally:
        os.chdir(old)


def json_of(output: str):
    return json.loads(output[output.index("{"):output.rindex("}") + 1])


@pytest.fixture(scope="module")
def study(catalog_db, tmp_path_factory):
    """A study folder (study.toml found from the working directory, as a user works) with its run."""
    folder = tmp_path_factory.mktemp("study")
    (folder / "study.toml").write_text(STUDY)
    shutil.copy(catalog_db, folder / "s.duckdb")
    r = cli("--db", folder / "s.duckdb", "run", "study.toml", cwd=folder)
    assert r.exit_code == 0, r.output
    return folder


def wording_rows(output: str) -> list[dict]:
    """The wording audits of `audit perturb --format json` (one table: under "rows")."""
    doc = json_of(output)
    return doc.get("wording", doc.get("rows"))


def run_result(folder, test="sent-weat10"):
    con = store.connect(folder / "s.duckdb", read_only=True)
    try:
        return store.one(con, "SELECT effect_size, p_value, units, r.seed, budget FROM results r JOIN runs USING (run_id) "
                              "WHERE test = ? AND starts_with(runs.command, 'run probe') AND coalesce(kind, 'test') = 'test' "
                              "ORDER BY created_at DESC LIMIT 1", [test])
    finally:
        con.close()


def runs_of(folder, prefix):
    con = store.connect(folder / "s.duckdb", read_only=True)
    try:
        return store.rows(con, "SELECT study, alpha, correction, seed FROM runs WHERE starts_with(command, ?) "
                               "ORDER BY started_at", [prefix])
    finally:
        con.close()


def test_audit_perturb_original_is_the_study_runs_result(study):
    d, p, units, seed, budget = run_result(study)
    assert (units, seed, budget) == ("words", 7, 2000)  # the study's procedure, per-test units included
    r = cli("--db", study / "s.duckdb", "audit", "perturb", "--rule", "syn-present", "--format", "json", cwd=study)
    assert r.exit_code == 0, r.output
    (row,) = wording_rows(r.output)
    assert row["test"] == "sent-weat10" and row["alpha"] == 0.05
    assert abs(row["original_d"] - d) < 1e-12 and abs(row["original_p"] - p) < 1e-12
    # its run row carries the study, its alpha and correction, and the study's seed
    assert runs_of(study, "audit perturb")[-1] == ("probe", 0.05, "bonferroni", 7)


def test_audit_perturb_flags_override_the_study(study):
    r = cli("--db", study / "s.duckdb", "audit", "perturb", "--rule", "syn-present", "--seed", "3", "--format",
            "json", cwd=study)
    assert r.exit_code == 0, r.output
    (row,) = wording_rows(r.output)
    assert runs_of(study, "audit perturb")[-1][-1] == 3
    # another seed, another sampled p (the same d)
    d, p, *_ = run_result(study)
    assert abs(row["original_d"] - d) < 1e-12 and row["original_p"] != p


def test_audit_perturb_dry_run_uses_the_study_tests(study):
    r = cli("--db", study / "s.duckdb", "audit", "perturb", "--dry-run", "--format", "csv", cwd=study)
    assert r.exit_code == 0, r.output
    assert "may2019,may2019~syn-called,synonymous frame," in r.output
