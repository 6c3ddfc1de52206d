"""Every command that makes results prints them to stdout (issue 53): `test`, `baseline` and
`audit templates` write the rows of the run just made in the format asked for (csv off a
terminal), and their prose and progress go to stderr, so `> out.csv` holds the results."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from stimkit.cli import app
from test_results import store_copy  # noqa: F401  (a private copy of the generated catalog store)

REPO = Path(__file__).resolve().parent.parent


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def stored(path, sql, params=()):
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("flag", [["-f", "csv"], []])
def test_test_redirected_to_a_file_holds_a_header_and_a_row_per_result(tmp_path, flag):
    """`stimkit test weat6 weat7 -e glove-6b-50d -f csv > out.csv` in a shell (without -f: csv,
    stdout being a file): a header, then one row per result of the run, every number as stored."""
    out = tmp_path / "out.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_WAIT_POLICY": "PASSIVE"}
    with out.open("w") as stdout:
        done = subprocess.run([sys.executable, "-m", "stimkit", "--db", str(tmp_path / "s.duckdb"), "test", "weat6",
                               "weat7", "-e", "glove-6b-50d", "--budget", "500", *flag], cwd=tmp_path, env=env,
                              stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open()))
    results = stored(tmp_path / "s.duckdb", "SELECT result_id, test, encoder, effect_size, p_value FROM results "
                                            "ORDER BY result_id")
    assert len(rows) == len(results) == 2
    by_id = {r["result_id"]: r for r in rows}
    for result_id, test, encoder, d, p in results:
        row = by_id[result_id]
        assert (row["test"], row["encoder"]) == (test, encoder)
        assert float(row["effect_size"]) == d and float(row["p_value"]) == p  # full precision
    assert "[1/2] weat6" in done.stderr and "weat6" not in out.read_text().splitlines()[0]  # progress: stderr only


def test_test_prints_only_the_run_just_made(store_copy):
    first = invoke("--db", store_copy, "test", "weat6", "-e", "glove-6b-50d", "--budget", 300, "-q", "-f", "csv")
    assert first.exit_code == 0, first.output
    second = invoke("--db", store_copy, "test", "weat7", "-e", "glove-6b-50d", "--budget", 300, "-q", "-f", "csv",
                    "--columns", "run_id,test,d,n")
    assert second.exit_code == 0, second.output
    rows = list(csv.DictReader(io.StringIO(second.stdout)))
    (run_id,), = stored(store_copy, "SELECT run_id FROM results WHERE test = 'weat7'")
    (d,), = stored(store_copy, "SELECT effect_size FROM results WHERE test = 'weat7'")
    assert rows == [{"run_id": run_id, "test": "weat7", "d": repr(d), "n": "8/8/8/8 words"}]


def test_baseline_prints_its_rows(store_copy):
    r = invoke("--db", store_copy, "baseline", "weat6", "-e", "glove-6b-50d", "-k", 20, "--budget", 200, "--alpha",
               0.05)
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    (bid, k, fpr, percentile), = stored(store_copy, "SELECT baseline_id, k, fpr, percentile FROM baselines")
    # the share of the stored draws' p at or below 0.05, by hand
    draws = [p for (p,) in stored(store_copy, "SELECT p_value FROM baseline_draws WHERE baseline_id = ? "
                                              "AND effect_size IS NOT NULL", [bid])]
    assert len(rows) == 1 and rows[0]["baseline_id"] == bid and int(rows[0]["k"]) == k == 20
    assert float(rows[0]["fpr"]) == fpr == sum(p <= 0.05 for p in draws) / len(draws)
    assert float(rows[0]["percentile"]) == percentile
    assert "percentile: d among" in r.stderr and "percentile: d among" not in r.stdout


def test_audit_templates_prints_its_audits_without_being_asked(store_copy):
    """Off a terminal (no --format): the audits just stored as csv, then the templates that
    move each test most; the per-audit lines on stderr."""
    r = invoke("--db", store_copy, "audit", "templates", "-t", "sent-weat6", "-e", "glove-6b-50d", "--budget", 300)
    assert r.exit_code == 0, r.output
    audits, templates = r.stdout.split("\n\n")
    rows = list(csv.DictReader(io.StringIO(audits)))
    (test, template_set, full_d, n_templates), = stored(
        store_copy, "SELECT test, template_set, full_d, n_templates FROM audits")
    assert [(x["test"], x["template_set"], float(x["full_d"]), int(x["n_templates"])) for x in rows] == \
        [(test, template_set, full_d, n_templates)]
    assert csv.DictReader(io.StringIO(templates)).fieldnames[:4] == ["test", "template_set", "encoder", "frame"]
    assert "full test d=" in r.stderr and "full test d=" not in r.stdout


def test_run_says_its_summary_line_last(tmp_path):
    """`stimkit run`'s stderr in order: what it generated, its warnings, then the summary line last."""
    study = tmp_path / "study.toml"
    study.write_text('name = "two"\ntests = ["weat6", "weat7"]\nencoders = ["glove-6b-50d"]\n[options]\nbudget = 300\n')
    r = invoke("--db", tmp_path / "s.duckdb", "--study", study, "run", "-f", "csv")
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("run ") and " significant after holm at 0.01" in lines[-1]
    assert any(line.startswith("generated") for line in lines[:-1])
