"""CrowS tests in a study (issue 51): a study file names an imported CrowS test, `stimkit run`
scores it with the study's seed and records the run as the study's, a second run computes
nothing (the same import, encoder fingerprint, seed and resamples: run.crows_study), `status`
says what is not current and why, `results crows` in the study's folder reads the study's
rows, `catalog` lists the imported test with its pairs and licence, and each row's sign test
p is scipy's binomtest. One tiny random BERT (tests/fixtures/crows-pairs/make_figures.py) on
the fixture's first 30 pairs."""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import io
import os
import shutil

import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.cli import app

from conftest import FIXTURES

HERE = FIXTURES / "crows-pairs"
N_PAIRS = 30
STUDY = """name = "cs"
tests = ["crows-pairs"]
encoders = ["hf:{model},score=pll"]
alpha = 0.05
[options]
seed = {seed}
"""


def cli(*args, cwd=None):
    """The CLI as a user types it, in `cwd` (a study folder: its study.toml is found there)."""
    with contextlib.chdir(cwd or os.getcwd()):
        return CliRunner().invoke(app, [str(a) for a in args])


def rows_of(output: str) -> list[dict]:
    """The CSV rows a command printed (its stdout: CliRunner keeps stderr apart)."""
    return list(csv.DictReader(io.StringIO(output)))


def _build(folder):
    spec = importlib.util.spec_from_file_location("crows_make_figures", HERE / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(folder)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A study folder: 30 pairs imported, the tiny BERT on disk, study.toml at seed 7, run once."""
    folder = tmp_path_factory.mktemp("crows-study")
    with open(HERE / "crows_pairs_anonymized.csv", encoding="utf-8") as f:
        (folder / "pairs.csv").write_text("".join(f.readlines()[:N_PAIRS + 1]), encoding="utf-8")
    _build(folder / "bert")
    (folder / "study.toml").write_text(STUDY.format(model=folder / "bert", seed=7))
    db = folder / "s.duckdb"
    r = cli("--db", db, "import", "crows-pairs", folder / "pairs.csv", cwd=folder)
    assert r.exit_code == 0, r.output
    r = cli("--db", db, "run", "-f", "csv", cwd=folder)
    assert r.exit_code == 0, r.output
    return folder, db, r.stdout


def _query(db, sql, params=()):
    con = store.connect(db, read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def test_a_study_runs_its_crows_test_with_its_seed_as_the_studys_run(study):
    folder, db, output = study
    runs = _query(db, "SELECT DISTINCT r.run_id, r.study, r.alpha, r.seed, c.seed, c.n FROM crows_results c "
                      "JOIN runs r USING (run_id) WHERE c.split = 'all'")
    assert len(runs) == 1
    run_id, name, alpha, run_seed, seed, n = runs[0]
    assert (name, alpha, run_seed, seed, n) == ("cs", 0.05, 7, 7, N_PAIRS)
    # each variant's score is its pairs' decisions, as stored per pair (an independent count)
    for variant, score, wins in _query(db, "SELECT variant, score, wins FROM crows_results WHERE split = 'all'"):
        decided = [d for (d,) in _query(db, "SELECT decision FROM crows_pair_scores WHERE variant = ?", [variant])]
        assert len(decided) == N_PAIRS and wins == decided.count(1)
        assert score == pytest.approx(100 * decided.count(1) / N_PAIRS)
    # the run printed the study's rows (every variant of a masked model, all splits)
    printed = rows_of(output)
    assert {r["variant"] for r in printed} == {"nangia", "biasbench", "aul", "pll"}
    assert {r["run_id"] for r in printed} == {run_id}


def test_a_second_run_with_nothing_changed_computes_nothing(study):
    folder, db, _ = study
    before = _query(db, "SELECT count(*), (SELECT count(*) FROM runs), (SELECT count(*) FROM token_scores) "
                        "FROM crows_results")
    r = cli("--db", db, "run", "-f", "csv", cwd=folder)
    assert r.exit_code == 0, r.output
    assert "nothing to compute" in r.stderr
    assert _query(db, "SELECT count(*), (SELECT count(*) FROM runs), (SELECT count(*) FROM token_scores) "
                      "FROM crows_results") == before
    assert {row["seed"] for row in rows_of(r.stdout)} == {"7"}


def test_sign_p_is_scipys_binomtest_of_wins_against_losses(study):
    from scipy.stats import binomtest

    from stimkit.stats.pairs import sign_test_p

    for n in range(1, 41):
        for k in range(n + 1):
            assert sign_test_p(k, n - k) == pytest.approx(binomtest(k, n, 0.5).pvalue, rel=1e-12), (k, n)
    assert sign_test_p(0, 0) is None
    _, db, _ = study
    for wins, n, neutral, p in _query(db, "SELECT wins, n, neutral, sign_p FROM crows_results"):
        losses = n - wins - neutral
        if wins + losses == 0:
            assert p is None
        else:
            assert p == pytest.approx(binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-12)


def test_results_crows_in_the_study_folder_reads_the_studys_rows(study, tmp_path):
    folder, db, _ = study
    copy = tmp_path / "s.duckdb"
    shutil.copy(db, copy)
    # a later run outside the study, another seed: the store's latest, not the study's
    r = cli("--db", copy, "test", "crows-pairs", "-e", f"hf:{folder / 'bert'},score=pll", "--seed", "99", "-f", "csv")
    assert r.exit_code == 0, r.output
    in_study = rows_of(cli("--db", copy, "results", "crows", "-f", "csv", cwd=folder).stdout)
    whole = rows_of(cli("--db", copy, "results", "crows", "--whole-store", "-f", "csv", cwd=folder).stdout)
    assert in_study and {row["seed"] for row in in_study} == {"7"}
    assert whole and {row["seed"] for row in whole} == {"99"}
    assert {row["sign_p"] for row in in_study} != {""}


def test_status_says_what_is_not_current_and_run_redoes_it(study, tmp_path):
    folder, db, _ = study
    work = tmp_path / "study"
    shutil.copytree(folder, work)
    work_db = work / "s.duckdb"
    (work / "study.toml").write_text(STUDY.format(model=work / "bert", seed=7))
    status = lambda: rows_of(cli("--db", work_db, "status", "--all", "-f", "csv", cwd=work).stdout)  # noqa: E731
    # the copied model is the same weights (same fingerprint): current
    first = [r for r in status() if r["kind"] == "crows"]
    assert [r["state"] for r in first] == ["current"]
    (work / "study.toml").write_text(STUDY.format(model=work / "bert", seed=8))
    seed = [r for r in status() if r["kind"] == "crows"][0]
    assert (seed["state"], seed["command"]) == ("outdated", "stimkit run") and "seed" in seed["detail"]
    r = cli("--db", work_db, "run", "-f", "csv", cwd=work)
    assert r.exit_code == 0 and "nothing to compute" not in r.output, r.output
    assert [r["state"] for r in status() if r["kind"] == "crows"] == ["current"]
    # the import changes (one pair less): outdated, its import named
    lines = (work / "pairs.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (work / "pairs.csv").write_text("".join(lines[:-1]), encoding="utf-8")
    assert cli("--db", work_db, "import", "crows-pairs", work / "pairs.csv", cwd=work).exit_code == 0
    moved = [r for r in status() if r["kind"] == "crows"][0]
    assert moved["state"] == "outdated" and "import" in moved["detail"]
    # the encoder's weights change at the same path: a new fingerprint
    import torch
    from transformers import BertForMaskedLM

    model = BertForMaskedLM.from_pretrained(work / "bert")
    with torch.no_grad():
        model.cls.predictions.decoder.weight[0, 0] += 1.0
    model.save_pretrained(work / "bert")
    changed = [r for r in status() if r["kind"] == "crows"][0]
    assert changed["state"] == "outdated" and "encoder" in changed["detail"]


def test_catalog_lists_an_imported_crows_test_with_its_pairs_and_licence(study):
    folder, db, _ = study
    r = cli("--db", db, "catalog", "-f", "csv")
    assert r.exit_code == 0, r.output
    row = [x for x in rows_of(r.stdout) if x["test"] == "crows-pairs"]
    published = list(csv.DictReader(open(folder / "pairs.csv", encoding="utf-8")))
    assert len(row) == 1 and row[0]["licence"] == "CC-BY-SA-4.0" and int(row[0]["pairs"]) == N_PAIRS
    assert int(row[0]["stereo"]) == sum(p["stereo_antistereo"] == "stereo" for p in published)
    assert int(row[0]["bias_types"]) == len({p["bias_type"] for p in published})


def test_results_crows_at_80_columns_keeps_the_score_its_interval_and_p(study):
    from stimkit.views import crows as view

    _, db, _ = study
    con = store.connect(db, read_only=True)
    try:
        from stimkit.run import crows

        df = crows.stored(con)
    finally:
        con.close()
    buf = io.StringIO()
    view.show(df, "table", splits="main", stream=buf, width=80)
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    header = next(line for line in text.splitlines() if "variant" in line)
    for column in ("variant", "split", "score", "ci", "sign_p", "n"):
        assert f" {column} " in header, header
    shown = view.table(view.chosen(df, "main"))
    for ci in shown["ci"].to_list():  # each interval whole on its line
        assert ci in text
