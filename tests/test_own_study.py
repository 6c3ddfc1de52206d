"""A researcher's own study, first-class: test definitions in files, ad-hoc tests stored by
name, study files, audits of any template-rendered test, and families that hold what the
user tested, on current stimuli (issues 23 and 24)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import stimkit
from stimkit.catalog import definitions as catalog
from stimkit.cli import app
from conftest import snapshot
from test_plan_path import v030_glove  # noqa: F401  (a fixture: GloVe under its v0.3.0 identity)

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "care-tech"
invoke = CliRunner().invoke


@pytest.fixture
def example(tmp_path):
    """The shipped example study, copied (tests edit its templates)."""
    shutil.copytree(EXAMPLE, tmp_path / "care-tech")
    return tmp_path / "care-tech"


def inputs(ex: Path) -> dict:
    return {"catalog_dir": ex / "tests", "wordlist_dir": ex / "wordlists", "template_dir": ex / "templates"}


def test_a_user_test_runs_by_name_and_equals_the_same_test_ad_hoc(example, tmp_path):
    with stimkit.open(tmp_path / "s.duckdb", **inputs(example)) as s:
        by_name = s.test(["care-tech-gender"], encoders=["glove-6b-50d"], budget=5000)
        (named,) = by_name.results
        assert named.context == "word" and named.test_source.startswith("user:")
        adhoc = s.test(x="care_occupations@word", y="technical_occupations@word", a="women@word", b="men@word",
                       name="mine", encoders=["glove-6b-50d"], budget=5000)
        (a,) = adhoc.results
        # the same stimuli: the same d (p's sample stream is seeded by the test's name, so it differs)
        assert (a.effect_size, a.statistic, a.n_x, a.context) == (named.effect_size, named.statistic, named.n_x, "word")
        again = s.test(["mine"], encoders=["glove-6b-50d"], budget=5000)
        (b,) = again.results
        assert (b.effect_size, b.p_value, b.test_source) == (a.effect_size, a.p_value, "adhoc")


def test_ad_hoc_and_named_give_identical_d_and_p_under_the_same_name(example, tmp_path):
    """Defined in a file or typed on the command line, one test is one test: same d, same p."""
    with stimkit.open(tmp_path / "a.duckdb", **inputs(example)) as s:
        (named,) = s.test(["care-tech-warmth"], encoders=["glove-6b-50d"], budget=3000, seed=5).results
    with stimkit.open(tmp_path / "b.duckdb", wordlist_dir=example / "wordlists") as s:
        (adhoc,) = s.test(x="care_occupations@word", y="technical_occupations@word", a="warmth@word",
                          b="competence@word", name="care-tech-warmth", encoders=["glove-6b-50d"], budget=3000,
                          seed=5).results
    assert (adhoc.effect_size, adhoc.p_value, adhoc.p_method) == (named.effect_size, named.p_value, named.p_method)


def test_save_writes_a_definition_that_loads_back(example, tmp_path):
    saved = tmp_path / "defs" / "mine.toml"
    saved.parent.mkdir()
    with stimkit.open(tmp_path / "s.duckdb", wordlist_dir=example / "wordlists") as s:
        s.test(x="care_occupations@word", y="technical_occupations@word", a="women@word", b="men@word",
               name="mine", encoders=["glove-6b-50d"], budget=2000, save=saved)
    loaded = catalog.load_dir(saved.parent)["mine"]
    assert loaded.sets == ("care_occupations@word", "technical_occupations@word", "women@word", "men@word")
    assert loaded.context == "word" and tomllib.loads(saved.read_text())["mine"]["sets"][2] == "women@word"


def test_the_audit_of_a_user_test_under_a_user_template_set(example, tmp_path):
    with stimkit.open(tmp_path / "s.duckdb", **inputs(example)) as s:
        s.test(["care-tech-gender-sent"], encoders=["glove-6b-50d"], budget=2000)
        m_before = s.results().family.m
        run_id, audits = s.audit(["care-tech-gender-sent"], ["glove-6b-50d"], ["workplace", "may2019"], budget=2000)
        assert [a.template_set for a in audits] == ["workplace", "may2019"]
        work = audits[0]
        # one row per template of the workplace set (5 frames), alone and left out
        alone = [t for t in work.templates if t.analysis == "alone"]
        assert work.n_templates == 5 and len(alone) == 5 and len(work.templates) == 10
        assert work.pooled_d is not None and work.tau2 is not None and work.tau2 >= 0
        stored = s.query("SELECT count(*) AS n FROM audit_templates WHERE audit_id = $a", {"a": work.audit_id})
        assert stored["n"][0] == 10
        assert s.results().family.m == m_before == 1  # audits add nothing to the family
        assert s.results(kind="audit").height == 2


def test_the_example_study_runs_on_a_fresh_store(example, tmp_path):
    r = invoke(app, ["--db", str(tmp_path / "s.duckdb"), "run", str(example / "study.toml"), "-e", "glove-6b-50d",
                     "--format", "csv"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "test,glove-6b-50d" and len(lines) == 5
    assert {line.split(",")[0] for line in lines[1:]} == {"care-tech-gender", "care-tech-gender-sent", "care-tech-warmth",
                                                          "care-tech-warmth-sent"}
    assert "over all 4 rows" in r.stderr  # m = the study's hypotheses: 4 tests x 1 encoder
    with stimkit.open(tmp_path / "s.duckdb") as s:
        run_id = s.study_run(example / "study.toml")
        assert s.results(run=run_id).family.m == 4


def test_run_may_2019_gives_the_published_numbers_of_stimkit_test(catalog_db, tmp_path, v030_glove):
    """The paper as a study file runs through the same path: on GloVe, its 46 results equal the
    v0.3.0 numbers of the same tests (tests/data)."""
    import json

    recorded = {r["test"]: r for r in json.loads((REPO / "tests" / "data" / "glove_catalog_v030.json").read_text())["rows"]}
    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        job = s.run("may-2019", ["glove-6b-50d"])
    assert len(job.run.results) == 46 and job.family.m == 46 and len(job.run.wefats) == 2
    for r in job.run.results:
        assert (r.effect_size, r.p_value) == (recorded[r.test]["effect_size"], recorded[r.test]["p_value"]), r.test
        # the paper's procedure: sentences as units, and the p with words as units beside it
        assert r.units == ("words" if r.context == "word" else "sentences") and r.p_words is not None, r.test
    # check still pairs each published word test with its sentence test (now by their word lists)
    pairs = set(job.checks.filter(job.checks["check_name"] == "word vs sentence")["tests"])
    assert {f"{t} / sent-{t}" for t in ("weat1", "weat2", "weat3", "weat3b", "weat4", "weat5", "weat5b", "weat6",
                                         "weat6b", "weat7", "weat7b", "weat8", "weat8b", "weat9", "weat10")} <= pairs


@pytest.mark.parametrize("make, args, message", [
    (lambda d: (d / "study.toml").write_text('name = "x"\ntests = ["weat1"]\ncolour = "red"\n'),
     ["run", "{d}/study.toml"], "unknown key 'colour'"),
    (lambda d: (d / "t.toml").write_text('[three]\nsets = ["flowers@word", "insects@word", "pleasant@word"]\n'),
     ["--catalog-dir", "{d}", "test", "three"], "`sets` must list four sets (X, Y, A, B), not 3"),
    (lambda d: (d / "t.toml").write_text('[weat1]\nsets = ["insects@word", "flowers@word", "pleasant@word", '
                                          '"unpleasant@word"]\n'),
     ["--catalog-dir", "{d}", "test", "weat1"], "has the name of a built-in test"),
    (lambda d: None, ["test", "sent-waet6"], "did you mean sent-weat6"),
    (lambda d: None, ["run", "may-2091"], "unknown study 'may-2091'"),
])
def test_bad_study_input_is_one_line_exit_2_and_the_store_unchanged(catalog_db, tmp_path, make, args, message):
    db = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, db)
    d = tmp_path / "defs"
    d.mkdir()
    make(d)
    con = stimkit.store.connect(db)
    before = snapshot(con)
    con.close()
    r = invoke(app, ["--db", str(db), *[a.replace("{d}", str(d)) for a in args]])
    assert r.exit_code == 2, r.output
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    con = stimkit.store.connect(db)
    assert snapshot(con) == before
    con.close()


def test_a_regenerated_set_makes_older_results_stale(example, tmp_path):
    """Change one template line and regenerate: the family keeps only results on the current
    versions and says how many it left out; --include-stale shows both."""
    with stimkit.open(tmp_path / "s.duckdb", **inputs(example)) as s:
        s.test(["care-tech-gender-sent"], encoders=["glove-6b-50d"], budget=1000)
        old = s.results()
        template = example / "templates" / "workplace" / "count_noun.j2"
        template.write_text(template.read_text().replace("works here", "works over here"))
        s.generate(["care_occupations"], ["workplace"], example / "wordlists", example / "templates")
        new = s.test(["care-tech-gender-sent"], encoders=["glove-6b-50d"], budget=1000).results[0]
        fresh = s.results()
        family = fresh.family
        assert family.m == 1 and family.stale == 1 and "1 result on superseded set versions" in family.stale_note
        assert fresh["result_id"].to_list() == [new.result_id] != old["result_id"].to_list()
        both = s.results(include_stale=True)
        assert sorted(both["result_id"].to_list()) == sorted([new.result_id, old["result_id"][0]])


def test_audits_and_cuts_leave_m_unchanged_and_retire_round_trips(catalog_db, tmp_path):
    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        s.test(["weat1", "weat2", "sent-weat9"], encoders=["glove-6b-50d"], budget=1000)
        assert s.results().height == 3
        s.test(["sent-weat9"], encoders=["glove-6b-50d"], budget=1000, cuts=20)  # a replicate with cuts
        assert s.results().height == 3
        s.audit(["sent-weat9"], ["glove-6b-50d"], ["may2019", "past_tense"], budget=1000)
        assert s.results().height == 3
        n_results = s.query("SELECT count(*) AS n FROM results")["n"][0]
        assert s.retire("test = 'weat2'", "mislabelled stimuli") == 1
        assert sorted(s.results()["test"].to_list()) == ["sent-weat9", "weat1"]
        assert s.query("SELECT reason FROM result_retirements")["reason"].to_list() == ["mislabelled stimuli"]
        assert s.unretire("test = 'weat2'") == 1
        assert s.results().height == 3
        assert s.query("SELECT count(*) AS n FROM results")["n"][0] == n_results  # nothing deleted


def test_the_report_s_rerun_line_is_pinned_to_set_versions_and_reproduces_the_result(catalog_db, tmp_path):
    """The line the report prints for a result selects the set versions the result used, and
    running it gives the same d and p, however the sets were regenerated since."""
    import shlex

    from stimkit.report.data import item_versions, rerun_command

    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        (res,) = s.test(["sent-weat9"], encoders=["glove-6b-50d"], budget=2000, seed=4).results
        row = s.query("SELECT * FROM results WHERE result_id = $r", {"r": res.result_id}).row(0, named=True)
        line = rerun_command(row, item_versions(s.con, [res.result_id])[res.result_id])
    assert "set_version = '" in line and "--rerun" in line and "--override" not in line
    r = invoke(app, ["--db", str(path), *shlex.split(line)[1:]])
    assert r.exit_code == 0, r.output
    with stimkit.open(path) as s:
        again = s.query("SELECT effect_size, p_value, n_x, n_y FROM results ORDER BY created_at DESC LIMIT 1").row(0)
    assert again == (res.effect_size, res.p_value, res.n_x, res.n_y)


def test_the_rerun_line_leaves_your_test_definition_in_force(example, tmp_path):
    """The report's line for a result of your test reproduces it, but never stands in for your
    test: afterwards `stimkit test NAME` without --catalog-dir does not know it (rather than run
    the old word lists), and with it runs your definition on your current word lists."""
    import shlex

    from stimkit.report.data import item_versions, rerun_command

    path = tmp_path / "s.duckdb"
    folders = ["--catalog-dir", str(example / "tests"), "--wordlist-dir", str(example / "wordlists")]
    r = invoke(app, ["--db", str(path), "test", "care-tech-gender", "-e", "glove-6b-50d", "--budget", "2000", *folders])
    assert r.exit_code == 0, r.output
    with stimkit.open(path) as s:
        row = s.query("SELECT * FROM results").row(0, named=True)
        line = rerun_command(row, item_versions(s.con, [row["result_id"]])[row["result_id"]])
    assert shlex.split(line)[:5] == ["stimkit", "test", "--rerun", "--name", "care-tech-gender"]
    r = invoke(app, ["--db", str(path), *shlex.split(line)[1:]])
    assert r.exit_code == 0, r.output
    with stimkit.open(path, read_only=True) as s:
        again = s.query("SELECT effect_size, p_value FROM results ORDER BY created_at DESC LIMIT 1").row(0)
        assert again == (row["effect_size"], row["p_value"])  # the same stimuli, the same name: the same numbers
        assert s.query("SELECT count(*) AS n FROM imported_tests")["n"][0] == 0  # nothing stored under your name
    # your word list changes: your test, by name, runs it; without your folder, the name is unknown
    lists = example / "wordlists" / "occupations.toml"
    lists.write_text(lists.read_text().replace('"nurse"', '"paramedic"', 1))
    assert '"paramedic"' in lists.read_text()
    r = invoke(app, ["--db", str(path), "generate", "-w", "care_occupations", "-t", "word", *folders[2:]])
    assert r.exit_code == 0 and "1 new" in r.output, r.output
    r = invoke(app, ["--db", str(path), "test", "care-tech-gender", "-e", "glove-6b-50d", "--budget", "2000"])
    assert r.exit_code == 2 and "no test matches 'care-tech-gender'" in r.output
    r = invoke(app, ["--db", str(path), "test", "care-tech-gender", "-e", "glove-6b-50d", "--budget", "2000", *folders])
    assert r.exit_code == 0, r.output
    with stimkit.open(path, read_only=True) as s:
        words = s.query("""SELECT list(DISTINCT word) AS w FROM results_with_items
                           WHERE result_id = (SELECT result_id FROM results ORDER BY created_at DESC LIMIT 1)""")["w"][0]
    assert "paramedic" in words and "nurse" not in words


def test_the_report_of_a_study_names_the_results_it_leaves_out_and_why(example, tmp_path):
    """After a word list changed, `report --study` shows the study's current results and names
    the others: stale (which set changed), retired (the reason) and failed (the cause)."""
    path = tmp_path / "s.duckdb"
    with stimkit.open(path) as s:
        s.run(example / "study.toml", ["glove-6b-50d"], budget=1000)
    people = example / "wordlists" / "people.toml"
    people.write_text(people.read_text().replace('"aunt"', '"niece"', 1))
    r = invoke(app, ["--db", str(path), "generate", "-w", "women", "-t", "word", "-t", "workplace",
                     "--wordlist-dir", str(example / "wordlists"), "--template-dir", str(example / "templates")])
    assert r.exit_code == 0 and "2 new" in r.output, r.output
    with stimkit.open(path) as s:
        run_id = s.study_run(example / "study.toml")
        assert s.retire("test = 'care-tech-warmth'", "a typo in the warmth list") == 1
        # a failure of the run: kept with it (table run_failures)
        s.con.execute("INSERT INTO run_failures VALUES (?, 'care-tech-extra', 'glove-6b-50d', 'no vector for any word of X')",
                      [run_id])
        written = s.report(tmp_path / "report", formats=["html"], study=example / "study.toml")
    assert written.notes == ["left out: 4 of the 5 results in scope (2 stale, 1 retired, 1 failed); "
                             "the report's 'Left out' section names each and why"]
    html = (tmp_path / "report" / "report.html").read_text()
    section = html[html.index('<h2 id="left-out">'):html.index("</table>", html.index('<h2 id="left-out">'))]
    for test in ("care-tech-gender", "care-tech-gender-sent", "care-tech-warmth", "care-tech-extra"):
        assert f"<td>{test}</td>" in section, test
    assert "set women@word regenerated since" in section and "set women@workplace regenerated since" in section
    assert "retired: a typo in the warmth list" in section and "no vector for any word of X" in section
    assert "<td>care-tech-warmth-sent</td>" not in section  # shown: current, not retired


def test_a_run_keeps_its_failures(catalog_db, tmp_path):
    """A test that fails on one encoder while others succeed: the run is stored with the failure,
    which the analysis names as left out of that run."""
    import polars as pl

    from stimkit.analysis import families

    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    half = tmp_path / "half.parquet"  # vectors for weat6's target words only: weat7 has none for X
    with stimkit.open(path) as s:
        names = s.query("SELECT DISTINCT stimulus FROM current_stimuli WHERE set_name IN "
                        "('male_names@word', 'female_names@word', 'career@word', 'family@word')")["stimulus"].to_list()
    rng = __import__("numpy").random.default_rng(0)
    pl.DataFrame({"text": names, "vector": rng.normal(size=(len(names), 4)).tolist()}).write_parquet(half)
    with stimkit.open(path) as s:
        report = s.test(["weat6", "weat7"], encoders=[f"import:{half}"], budget=500)
        assert len(report.results) == 1 and len(report.failures) == 1
        stored = s.query("SELECT test, cause FROM run_failures WHERE run_id = $r", {"r": report.run_id}).rows()
        assert stored == [("weat7", report.failures[0].cause)]
        families.define_family(s.con, f"run_id = '{report.run_id}'")
        left = families.left_out(s.con, f"run_id = '{report.run_id}'", report.run_id)
        assert left.select("test", "why").rows() == [("weat7", "failed")]


def test_check_tests_differences_instead_of_comparing_decisions(catalog_db, tmp_path):
    """On the catalog with GloVe: two same-direction effects on either side of alpha
    (weat6b / sent-weat6b) and two non-significant effects of opposite sign (weat3b /
    sent-weat3b) are notes, not violations; every violation names the test that found it."""
    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        s.test(["weat3b", "sent-weat3b", "weat6b", "sent-weat6b", "weat7", "weat8"], encoders=["glove-6b-50d"])
        df = s.check()
    by = {row["tests"]: row for row in df.iter_rows(named=True)}
    six = by["weat6b / sent-weat6b"]
    assert six["verdict"] == "note" and "different decisions at alpha" in six["reason"] and six["diff_p"] > 0.01
    assert by["weat3b / sent-weat3b"]["verdict"] == "note" and "opposite signs" in by["weat3b / sent-weat3b"]["reason"]
    assert set(df["verdict"].to_list()) <= {"consistent", "note", "violation", "not comparable"}
    for row in df.filter(df["verdict"] == "violation").iter_rows(named=True):
        assert row["test_used"] and (row["diff_p"] is None or row["diff_p"] <= 0.01)
    # a partner that is missing is named
    missing = [r for r in by.values() if r["verdict"] == "not comparable"]
    assert all("no result for" in r["reason"] or "differs in" in r["reason"] for r in missing)


def test_a_family_that_mixes_set_versions_says_so(example, tmp_path):
    with stimkit.open(tmp_path / "s.duckdb", **inputs(example)) as s:
        s.test(["care-tech-gender"], encoders=["glove-6b-50d"], budget=500)
        family = s.results().family
        assert family.mixed == () and family.mixed_note is None
        lists = example / "wordlists" / "people.toml"
        lists.write_text(lists.read_text().replace('"wife"]', '"wife", "lady"]'))
        s.generate(["women"], ["word"], example / "wordlists")
        s.test(["care-tech-gender"], encoders=["glove-6b-50d,pooling=token"], budget=500)
        family = s.results(include_stale=True).family
        assert family.mixed == ("care-tech-gender",) and "different set versions" in family.mixed_note


def test_a_multi_word_item_of_unknown_kind_is_an_error_naming_it(tmp_path):
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "jobs.toml").write_text('[jobs]\nwords = ["nurse", "data scientist"]\n')
    r = invoke(app, ["--db", str(tmp_path / "s.duckdb"), "generate", "--wordlist-dir", str(lists)])
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "jobs.toml:2" in r.stderr and "'data scientist'" in r.stderr and 'kind = "count_noun"' in r.stderr
    assert not (tmp_path / "s.duckdb").exists()
    (lists / "jobs.toml").write_text('[jobs]\nwords = ["nurse", { word = "data scientist", kind = "count_noun", person = true }]\n')
    r = invoke(app, ["--db", str(tmp_path / "s.duckdb"), "generate", "--wordlist-dir", str(lists), "-t", "may2019"])
    assert r.exit_code == 0, r.output
    with stimkit.open(tmp_path / "s.duckdb") as s:
        texts = s.query("SELECT stimulus FROM current_stimuli WHERE word = 'data scientist'")["stimulus"].to_list()
    assert "A data scientist is a person." in texts and "A data scientist is a thing." not in texts
