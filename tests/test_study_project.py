"""A study is a project, and one study gives one set of numbers (issue 38).

A religion study written by hand (tests/fixtures/religion: its own word lists of given names
and traits, its own template set, a word and a sentence test, alpha 0.05, a baseline of 12
pairs) runs from its own folder with no folder flags; every command finds it; each figure that
appears in two places is the same figure at the study's alpha."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

from stimkit.views import emit as output
from stimkit.cli import app

REPO = Path(__file__).resolve().parent.parent
RELIGION = REPO / "tests" / "fixtures" / "religion"
ENV = ("STIMKIT_DB", "STIMKIT_STUDY", "STIMKIT_CATALOG_DIR")
invoke = CliRunner().invoke


def rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture(scope="module")
def religion(tmp_path_factory):
    """The religion study copied to a folder of its own and run there, with no flags."""
    folder = tmp_path_factory.mktemp("study") / "religion"
    shutil.copytree(RELIGION, folder)
    with pytest.MonkeyPatch.context() as mp:
        for name in ENV:
            mp.delenv(name, raising=False)
        mp.chdir(folder)
        r = invoke(app, ["run", "--format", "csv"])
    assert r.exit_code == 0, r.output
    return folder, r


@pytest.fixture
def inside(religion, monkeypatch):
    """In the study's folder (a subfolder of it: the study file is found from below too)."""
    folder, _ = religion
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    (folder / "notes").mkdir(exist_ok=True)
    monkeypatch.chdir(folder / "notes")
    return folder


def test_run_finds_the_study_and_stores_beside_it(religion):
    folder, r = religion
    assert (folder / "stimkit.duckdb").exists()
    grid = rows(r.stdout)
    # rows headed by the tests' categories, columns by the study's display names
    assert list(grid[0]) == ["test", "GloVe", "MiniLM"]
    assert {g["test"] for g in grid} == {
        "Christian names vs Muslim names / Peaceful vs Violent [religion-peace]",
        "Christian names vs Muslim names / Peaceful vs Violent [religion-peace-sent]"}
    assert "at alpha 0.05" in r.stderr and "holm over all 4 rows" in r.stderr
    con = duckdb.connect(str(folder / "stimkit.duckdb"), read_only=True)
    (study, alpha, correction), = con.execute("SELECT DISTINCT study, alpha, correction FROM runs").fetchall()
    names = con.execute("SELECT DISTINCT vocabulary FROM baselines").fetchall()
    drawn = con.execute("SELECT x_words FROM baseline_draws LIMIT 50").fetchall()
    con.close()
    assert (study, alpha, correction) == ("religion", 0.05, "holm")
    # given names stand in for given names: the Names Corpus, every drawn word in it
    assert [v for (v,) in names] == [names[0][0]] and names[0][0].startswith("names (Names Corpus 1.3)")
    corpus = {w.strip() for f in ("female.txt", "male.txt")
              for w in (REPO / "wordlists" / "names" / f).read_text().splitlines()}
    assert all(w in corpus for (words,) in drawn for w in words)


def test_every_command_finds_the_study_and_each_figure_is_one_figure(religion, inside):
    folder, run = religion
    # results: the study's alpha and correction, its baseline, n in units
    res = invoke(app, ["results", "--format", "csv", "--columns",
                       "test,encoder,d,p_value,rejected,baseline_percentile,baseline_fpr,n"])
    assert res.exit_code == 0, res.output
    assert "holm at alpha 0.05" in res.stderr
    by_key = {(r["test"], r["encoder"]): r for r in rows(res.stdout)}
    assert by_key[("religion-peace-sent", "minilm,pooling=mean")]["n"] == "10/10 words; 40/40/40/40 sentences"
    assert by_key[("religion-peace", "glove-6b-50d")]["n"] == "10/10/10/10 words"
    # baseline: the study's K and seed, reused, the same percentile and share at alpha 0.05
    base = invoke(app, ["baseline", "religion-*", "--format", "csv"])
    assert base.exit_code == 0, base.output
    assert "p <= 0.05" in base.stderr
    drawn = rows(base.stdout)
    assert len(drawn) == 4 and {b["stored"] for b in drawn} == {"reused"} and {b["k"] for b in drawn} == {"12"}
    for b in drawn:
        r = by_key[(b["test"], b["encoder"])]
        assert float(b["percentile"]) == pytest.approx(float(r["baseline_percentile"]), abs=1e-9)
        assert float(b["fpr"]) == pytest.approx(float(r["baseline_fpr"]), abs=1e-12)
    # check: at the study's alpha
    chk = invoke(app, ["check", "--format", "csv"])
    assert chk.exit_code == 0, chk.output
    assert "at alpha 0.05" in chk.stderr
    # test: the study's folders, encoders and procedure (a rerun of a stored hypothesis: same d and p)
    t = invoke(app, ["test", "religion-peace", "-e", "glove-6b-50d", "--quiet"])
    assert t.exit_code == 0, t.output
    again = rows(invoke(app, ["results", "--format", "csv", "--columns", "test,encoder,d,p_value"]).stdout)
    same = {(r["test"], r["encoder"]): r for r in again}[("religion-peace", "glove-6b-50d")]
    assert (same["d"], same["p_value"]) == (by_key[("religion-peace", "glove-6b-50d")]["d"],
                                            by_key[("religion-peace", "glove-6b-50d")]["p_value"])
    # that plain `test` run is no study's: the study in force still gives alpha and correction,
    # and the reading says so (not "as given": the user typed neither)
    for args in (["check", "--format", "csv"], ["results", "--format", "json"]):
        read = invoke(app, args)
        assert read.exit_code == 0, read.output
        assert "alpha 0.05 and holm correction: of study religion" in read.stdout + read.stderr, args
        assert "as given" not in read.stdout + read.stderr
    typed = invoke(app, ["check", "--format", "csv", "--alpha", "0.01"])
    assert "alpha 0.01 as given; holm correction: of study religion" in typed.stderr
    # sets --diagnose: the study's store, several names at once
    sets = invoke(app, ["sets", "christian_names@word", "muslim_names@word", "--diagnose", "--format", "csv"])
    assert sets.exit_code == 0, sets.output
    assert "\nchristian_names@word,10," in sets.stdout and "\nmuslim_names@word,10," in sets.stdout
    # audit templates: the study's own template set, flips at the study's alpha
    aud = invoke(app, ["audit", "templates", "-t", "religion-peace-sent", "-e", "glove-6b-50d", "--budget", "500"])
    assert aud.exit_code == 0, aud.output
    assert "decision flips at alpha 0.05=" in " ".join(aud.stderr.split())
    show = invoke(app, ["audit", "show", "--format", "json"])
    assert show.exit_code == 0 and '"alpha":0.05' in show.stdout
    # report: the study's run, its alpha, its baseline, its display names and row heads
    rep = invoke(app, ["report", "-o", str(folder / "report"), "--format", "html"])
    assert rep.exit_code == 0, rep.output
    html = (folder / "report" / "report.html").read_text()
    assert "percentile of 12 random pairs" in html and "percentile of 1,000" not in html
    for b in drawn:
        assert f"{float(b['fpr']):.1%} of the random pairs reach p" in html


def test_results_table_run_and_the_report_print_the_same_cells(religion, inside):
    folder, run = religion
    in_run = {(g["test"], c): v for g in rows(run.stdout) for c, v in g.items() if c != "test" and v}
    res = invoke(app, ["results", "--table", "--format", "csv"])
    assert res.exit_code == 0, res.output
    in_results = {(g["test"], c): v for g in rows(res.stdout) for c, v in g.items() if c != "test" and v}
    assert in_results == in_run and len(in_run) == 4
    report = folder / "report-cells"
    assert invoke(app, ["report", "-o", str(report), "--format", "html"]).exit_code == 0
    lines = [line.strip("|").split("|") for line in (report / "tables" / "table4.md").read_text().splitlines()
             if line.startswith("|") and "---" not in line]
    header, body = [c.strip() for c in lines[0]], lines[1:]
    in_report = {(cells[0].strip(), header[i]): c.strip() for cells in body for i, c in enumerate(cells) if i and c.strip()}
    assert in_report == in_run
    # the paper's Markdown table: `results --table` and the report write the same grid (one view), captions apart
    md = invoke(app, ["results", "--table", "--format", "markdown"])
    assert md.exit_code == 0, md.output
    grid = md.stdout.split("\n\nTable: ")[0]
    assert grid == (report / "tables" / "table4.md").read_text().split("\n\nTable: ")[0] and grid.count("\n") == 3


def test_a_test_known_to_the_store_but_not_to_the_folders_says_where_it_came_from(religion, tmp_path, monkeypatch):
    folder, _ = religion
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # outside the study: its folders are not in force
    db = tmp_path / "copy.duckdb"
    shutil.copy(folder / "stimkit.duckdb", db)
    r = invoke(app, ["--db", str(db), "test", "religion-peace"])
    assert r.exit_code == 2
    assert "religion-peace from user:" in r.stderr and "religion.toml" in r.stderr and "--catalog-dir" in r.stderr


def test_study_env_and_flag_name_a_study_and_a_flag_overrides_a_key(religion, tmp_path, monkeypatch):
    folder, _ = religion
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    for how in (["--study", str(folder / "study.toml")], ["--study", str(folder)]):
        r = invoke(app, [*how, "results", "--format", "csv", "--columns", "test"])
        assert r.exit_code == 0 and "holm at alpha 0.05" in r.stderr, r.output
    monkeypatch.setenv("STIMKIT_STUDY", str(folder / "study.toml"))
    r = invoke(app, ["results", "--alpha", "0.01", "--format", "csv", "--columns", "test"])
    assert r.exit_code == 0 and "at alpha 0.01" in r.stderr, r.output


def test_init_then_run_in_its_folder(tmp_path, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    r = invoke(app, ["init", "mine"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "mine" / "study.toml").exists()
    again = invoke(app, ["init", "mine"])
    assert again.exit_code == 2 and "exists" in again.stderr
    monkeypatch.chdir(tmp_path / "mine")
    run = invoke(app, ["run", "--format", "csv"])
    assert run.exit_code == 0, run.output
    grid = rows(run.stdout)
    assert [g["test"] for g in grid] == ["sweets-pleasant", "sweets-pleasant-sent"]
    assert (tmp_path / "mine" / "stimkit.duckdb").exists()
    # every key of the study file is written out, commented where it is optional
    text = (tmp_path / "mine" / "study.toml").read_text()
    from stimkit.study.study import KEYS

    assert all(f"{k} =" in text or f"[{k}]" in text for k in KEYS - {"paper"}) and "# paper =" in text


# ----------------------------------------------------------------- one decision rule, one alpha

def test_p_exactly_at_alpha_is_significant_in_every_view_and_check():
    from stimkit.views import text as views_text
    from stimkit.stats import baseline, decision, difference, metrics

    alpha = 0.01
    assert decision.significant(0.01, alpha) and not decision.significant(0.010000001, alpha)
    assert views_text.marks({"p_value": 0.01}, alpha) == "*"
    assert baseline.rejection_rate(np.array([0.01, 0.02]), alpha) == 0.5
    v = difference.classify(0.5, 0.01, -0.5, 0.01, alpha, None)
    assert v.verdict == "violation" and "both significant" in v.reason
    # check --metrics: p = alpha and p < alpha are the same decision (it counted p < alpha)
    agree = metrics.sign_agreement({"test": ["t", "t"], "encoder": ["e", "e"], "metric": ["weat", "rnsb"],
                                    "value": [0.4, 0.2], "p": [0.01, 0.005]}, alpha)
    assert agree["n_significant"][0] == 2 and agree["decisions_agree"][0] is True


def test_p_at_alpha_in_the_store_is_marked_and_rejected(tmp_path, monkeypatch):
    import stimkit

    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "s.duckdb"
    with stimkit.open(db) as s:
        s.test(["weat1"], encoders=["glove-6b-50d"], budget=200)
        s.con.execute("UPDATE results SET p_value = 0.05, p_words = 0.05")
    r = invoke(app, ["--db", str(db), "results", "--table", "--alpha", "0.05", "--correct", "none", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert rows(r.stdout)[0]["glove-6b-50d"].split()[0].endswith("**")  # rejected (no correction: p <= alpha)
    plain = invoke(app, ["--db", str(db), "results", "--alpha", "0.05", "--correct", "none", "--format", "csv",
                         "--columns", "test,rejected"])
    assert rows(plain.stdout)[0]["rejected"] == "true"


def test_the_recorded_command_is_the_parsed_invocation(tmp_path, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "s.duckdb"
    r = invoke(app, ["--db", str(db), "baseline", "weat6", "-k", "4", "--budget", "200", "--db", str(db)])
    assert r.exit_code == 0, r.output
    t = invoke(app, ["test", "--db", str(db), "weat6", "--budget", "200", "--quiet"])
    assert t.exit_code == 0, t.output
    con = duckdb.connect(str(db), read_only=True)
    commands = [c for (c,) in con.execute("SELECT command FROM runs ORDER BY started_at").fetchall()]
    con.close()
    assert commands == ["baseline weat6 -k 4 --budget 200", "test weat6 --budget 200 --quiet"]


def test_a_reused_baseline_is_read_at_the_alpha_of_the_run(tmp_path):
    """A baseline stored at 0.01 and reused by a run at 0.05 reports its share at 0.05 (from its draws)."""
    import stimkit

    with stimkit.open(tmp_path / "s.duckdb") as s:
        first = s.baseline(["weat6"], sets=6, budget=200, alpha=0.01).baselines[0]
        second = s.baseline(["weat6"], sets=6, budget=200, alpha=0.05)
        (reused,) = second.baselines
        p = np.array([v for (v,) in s.con.execute("SELECT p_value FROM baseline_draws WHERE baseline_id = ?",
                                                    [first.baseline_id]).fetchall()])
    assert reused.baseline_id == first.baseline_id and reused.baseline_id in second.reused
    assert (first.alpha, reused.alpha) == (0.01, 0.05)
    assert first.fpr == np.mean(p <= 0.01) and reused.fpr == np.mean(p <= 0.05)


# ----------------------------------------------------------------- audits at the view's alpha

def _audit_store(path: Path):
    """An audit stored at alpha 0.01 whose full test has p 0.021: at 0.05 only the fourth
    template by shift flips the decision; at 0.01 the three that shift d most do."""
    import stimkit

    with stimkit.open(path) as s:
        con = s.con
        con.execute("INSERT INTO audits (audit_id, run_id, test, template_set, encoder, fingerprint, alpha, full_d, "
                    "full_p, n_templates, decision_flip_share) VALUES ('a1', 'r1', 't', 'set', 'e', 'f', 0.01, 0.5, "
                    "0.021, 4, 0.75)")
        for frame, shift, p in (("A", 0.5, 0.001), ("B", 0.4, 0.002), ("C", 0.3, 0.003), ("D", 0.1, 0.2)):
            con.execute("INSERT INTO audit_templates (audit_id, analysis, frame, effect_size, p_value, shift, "
                        "decision_flip) VALUES ('a1', 'alone', ?, ?, ?, ?, ?)", [frame, 0.5 + shift, p, shift, p <= 0.01])


def test_audit_show_judges_flips_at_its_alpha_and_lists_flips_first(tmp_path):
    import stimkit

    _audit_store(tmp_path / "s.duckdb")
    with stimkit.open(tmp_path / "s.duckdb", read_only=True) as s:
        audits, movers = s.audits(alpha=0.05)
        assert audits["decision_flip_share"][0] == 0.25 and audits["alpha"][0] == 0.05
        assert movers["frame"].to_list() == ["D", "A", "B"] and movers["decision_flip"].to_list() == [True, False, False]
        audits, movers = s.audits()  # the audit's own alpha
        assert audits["decision_flip_share"][0] == 0.75 and movers["frame"].to_list() == ["A", "B", "C"]


# ----------------------------------------------------------------- views at 80 columns

def test_check_at_80_columns_keeps_the_tests_and_the_reason(religion, inside, monkeypatch):
    monkeypatch.setattr(output, "out", output.make_console(width=80))
    r = invoke(app, ["check", "--format", "table"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    cells = [[c.strip() for c in line.split("|")[1:-1]]
             for line in lines[1:next(i for i, line in enumerate(lines) if i and line.startswith("|-"))]]
    heads = ["".join(parts) for parts in zip(*cells)]  # each column's header, folded lines joined
    assert all(any(c in h for h in heads) for c in ("check_name", "tests", "verdict", "reason", "detail")), heads
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    base = invoke(app, ["baseline", "religion-peace", "--format", "table"])
    header = base.stdout.splitlines()[1]
    assert all(f" {c} " in header for c in ("d", "percentile", "fpr", "d_x", "d_y"))


def test_the_plain_results_table_prints_no_legend_of_marks_it_does_not_show(religion, inside, monkeypatch):
    monkeypatch.setattr(output, "out", output.make_console(width=200))
    r = invoke(app, ["results", "--format", "table"])
    assert r.exit_code == 0 and "** also significant" not in r.stderr and "rejected: adjusted p <= 0.05" in r.stderr
    t = invoke(app, ["results", "--table", "--format", "table"])
    assert "**" not in t.stdout and "** also significant" not in t.stderr  # nothing significant: no legend for it


# ----------------------------------------------------------------- the procedure, declared once

def test_test_baseline_and_audit_share_the_procedure_options():
    import re

    def options(*command):
        r = invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
        return {o for o in re.findall(r"(--[a-z][a-z-]+)", r.stdout)}

    bundle = {"--encoder", "--budget", "--method", "--alternative", "--seed", "--units", "--balance", "--cut-seed",
              "--alpha"}
    for command in (["test"], ["baseline"], ["audit", "templates"], ["audit", "compare"]):
        found = options(*command)
        assert bundle <= found, (command, bundle - found)
        assert "--clustered" not in found  # a hidden alias
    help_text = invoke(app, ["test", "--help"], env={"COLUMNS": "200"}).stdout
    assert "What to test" in help_text and "The procedure" in help_text and "Output" in help_text


def test_clustered_is_units_words(tmp_path):
    db = tmp_path / "s.duckdb"
    for flags in (["--clustered"], ["--units", "words"]):
        r = invoke(app, ["--db", str(db), "test", "sent-weat6", "--budget", "200", "--quiet", *flags])
        assert r.exit_code == 0, r.output
    con = duckdb.connect(str(db), read_only=True)
    units = con.execute("SELECT units, clustered, p_value FROM results ORDER BY created_at").fetchall()
    con.close()
    assert units[0] == units[1] and units[0][:2] == ("words", True)


def test_a_global_option_missing_its_value_is_a_usage_error(tmp_path):
    r = invoke(app, ["--db", "--catalog-dir", str(tmp_path), "results"])
    assert r.exit_code == 2 and "--db needs a value" in r.output


# ----------------------------------------------------------------- study files of the wrong type (issue 39, 10)

@pytest.mark.parametrize("text, message", [
    ('name = "s"\ntests = ["weat1"]\n[options]\nbudget = "lots"\n', "`options.budget`: input should be a valid integer, not 'lots'"),
    ('name = "s"\ntests = ["weat1"]\n[table]\nrows = 5\n', "`table.rows`: input should be a valid list, not 5"),
    ('name = "s"\ntests = ["weat1"]\n[options]\nbudgett = 5\n', "unknown key 'options.budgett'"),
    ('name = "s"\ntests = ["weat1"]\nchecks = "false"\n', "`checks`: input should be a valid boolean, not 'false'"),
    ('name = "s"\ntests = ["weat1"]\nalpha = "0.05"\n', "`alpha`: input should be a valid number, not '0.05'"),
    ('name = "s"\ntests = ["weat1"]\nbaseline = "lots"\n', "`baseline` must be a number of random pairs"),
])
def test_a_study_file_of_the_wrong_type_is_one_line_naming_file_and_key(tmp_path, monkeypatch, text, message):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "study.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    for args in (["run"], ["results"], ["--study", str(tmp_path / "study.toml"), "check"]):
        r = invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        line = " ".join(r.stderr.split())
        assert str(tmp_path / "study.toml") in line and message in line, line
    assert not (tmp_path / "stimkit.duckdb").exists()  # nothing written


def _study_fuzz():
    from hypothesis import strategies as st

    from stimkit.study.study import KEYS

    from test_inputs import scalar, toml_value, value

    keys = st.sampled_from(sorted(KEYS) + ["colour", "Alpha", "options.x"])
    nested = st.dictionaries(st.sampled_from(["budget", "seed", "units", "alternative", "sets", "layout", "rows", "heads",
                                              "x*", "glove-6b-50d", "method", "metrics"]),
                             st.one_of(value, st.dictionaries(st.sampled_from(["units", "alternative", "budget"]),
                                                              value, max_size=2)), max_size=3)
    body = st.dictionaries(keys, st.one_of(value, nested), max_size=6)

    def as_toml(b: dict) -> str:
        plain = [f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in b.items() if not isinstance(v, dict)]
        tables = [f"[{json.dumps(k)}]\n" + "".join(f"{json.dumps(kk)} = {toml_value(vv)}\n" for kk, vv in v.items())
                  for k, v in b.items() if isinstance(v, dict)]
        return "".join(plain + tables)

    plausible = st.fixed_dictionaries({"name": st.sampled_from(["s", "", "x y"]), "tests": st.one_of(value, st.just(["weat1"]))},
                                      optional={k: st.one_of(value, nested) for k in sorted(KEYS - {"name", "tests"})})
    return st.one_of(st.text(max_size=40), body.map(as_toml), plausible.map(as_toml))


import json  # noqa: E402  (the fuzzer's TOML writer)

from hypothesis import HealthCheck, given, settings  # noqa: E402


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=_study_fuzz())
def test_fuzz_study_files(tmp_path_factory, text):
    """Whatever a study file holds: a Study, or one clean line (a usage or input error), never a traceback."""
    from stimkit.errors import StimkitError
    from stimkit.study import study as studies

    folder = tmp_path_factory.mktemp("fuzz-study")
    (folder / "study.toml").write_text(text, encoding="utf-8")
    try:
        found = studies.load(folder / "study.toml")
    except StimkitError as e:
        assert e.exit_code in (1, 2) and str(e).strip() and "\n" not in str(e), repr(str(e))
        return
    assert isinstance(found.alpha, float) and 0 < found.alpha < 1 and isinstance(found.checks, bool)
    assert all(isinstance(t, str) for t in found.tests + found.encoders + found.contexts)


def test_the_main_job_prints_counts_beside_its_table(catalog_db, tmp_path, monkeypatch):
    """`stimkit run` (may-2019) on GloVe: its 46-row table on stdout and at most ~40 lines beside
    it, counts each with the command that lists them (54 fragile lines, a 330-column consistency
    table and the WEFAT lines before)."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, db)
    r = invoke(app, ["--db", str(db), "run", "-e", "glove-6b-50d", "--budget", "2000", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert len(rows(r.stdout)) == 46
    beside = r.stderr.strip().splitlines()
    assert len(beside) <= 40, r.stderr
    text = " ".join(r.stderr.split())
    for said in ("fragile (the decision flips without one word): `stimkit results --run",
                 "tested consistency violation", "`stimkit check --run", "WEFATs (queries/wefat.toml): `stimkit wefat-results`"):
        assert said in text, said
    marked = sum(cell.count("^") for row in rows(r.stdout) for cell in row.values())
    assert (f"{marked} result{'s' if marked != 1 else ''} significant only with sentences as units (^)" in text) == bool(marked)


def test_test_in_a_study_takes_a_tests_own_options_and_a_flag_overrides_them(tmp_path, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "care-tech"
    shutil.copytree(REPO / "examples" / "care-tech", folder)
    study = folder / "study.toml"
    study.write_text(study.read_text().replace('encoders = ["glove-6b-50d", "minilm"]', 'encoders = ["glove-6b-50d"]')
                     .replace("budget = 20000", "budget = 500") + '\n[options."care-tech-gender-sent"]\nunits = "sentences"\n')
    monkeypatch.chdir(folder)
    assert invoke(app, ["test", "care-tech-gender-sent", "--quiet"]).exit_code == 0
    assert invoke(app, ["test", "care-tech-gender-sent", "--units", "words", "--quiet"]).exit_code == 0
    con = duckdb.connect(str(folder / "stimkit.duckdb"), read_only=True)
    found = con.execute("SELECT units, budget, alpha FROM results r JOIN runs USING (run_id) ORDER BY r.created_at").fetchall()
    con.close()
    # the study's budget; its test's own units; then the flag
    assert [(u, b) for u, b, _ in found] == [("sentences", 500), ("words", 500)]


def test_audit_compare_shows_d_with_its_interval(tmp_path, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    r = invoke(app, ["--db", str(tmp_path / "s.duckdb"), "audit", "compare", "-t", "sent-weat6", "-s", "may2019",
                     "-s", "past_tense", "-e", "glove-6b-50d", "--budget", "300", "--format", "csv"])
    assert r.exit_code == 0, r.output
    found = rows(r.stdout)
    assert len(found) == 2 and all(float(f["ci_low"]) < float(f["d"]) < float(f["ci_high"]) for f in found)


def test_a_baseline_that_fails_prints_no_empty_table(tmp_path, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "t.toml").write_text('["mine"]\nsets = ["flowers@word", "insects@word", "pleasant@word", "unpleasant@word"]\n')
    r = invoke(app, ["--db", str(tmp_path / "s.duckdb"), "--catalog-dir", str(tmp_path), "baseline", "mine", "-k", "3",
                     "--budget", "100", "--vocabulary", str(tmp_path / "t.toml"), "--format", "csv"])
    assert r.exit_code == 1 and r.stdout == "" and "failed:" in r.stderr, r.output


def test_the_share_of_cuts_that_reject_is_read_at_the_views_alpha(tmp_path):
    import stimkit

    with stimkit.open(tmp_path / "s.duckdb") as s:
        s.test(["sent-weat2"], encoders=["glove-6b-50d"], budget=200, cuts=4, alpha=0.01)
        for cut, p in enumerate((0.005, 0.01, 0.03, 0.2)):  # p's of the cuts, as stored
            s.con.execute("UPDATE result_cuts SET p_value = ? WHERE cut = ?", [p, cut])
        shares = {a: s.results(alpha=a).select("cut_reject_share", "cut_alpha").row(0) for a in (0.01, 0.05)}
    assert shares == {0.01: (0.5, 0.01), 0.05: (0.75, 0.05)}  # p = alpha rejects
