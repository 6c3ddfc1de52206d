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
                              "WHERE test = ? AND runs.study = 'probe' AND starts_with(runs.command, 'run') AND coalesce(kind, 'test') = 'test' "
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


def test_audit_show_prints_one_original_p_per_test_and_encoder(study):
    """Issue 48: `audit show` printed the template audit's p and the wording audit's p of one
    test and encoder, two numbers. The template audit takes the study's procedure (the run's p);
    the older wording audit (--seed 3, another procedure) is left out with a note."""
    d, p, *_ = run_result(study)
    r = cli("--db", study / "s.duckdb", "audit", "perturb", "--rule", "syn-present", "--seed", "3", cwd=study)
    assert r.exit_code == 0, r.output
    r = cli("--db", study / "s.duckdb", "audit", "templates", "-t", "sent-weat10", cwd=study)
    assert r.exit_code == 0, r.output
    r = cli("--db", study / "s.duckdb", "audit", "show", "--format", "json", cwd=study)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    shown = [(a["full_d"], a["full_p"]) for a in doc.get("rows", doc.get("audits", []))] + \
            [(w["original_d"], w["original_p"]) for w in doc.get("wording", [])]
    assert len(shown) >= 1 and all(abs(x - d) < 1e-12 and abs(y - p) < 1e-12 for x, y in shown), shown
    assert "left out: the wording audit of sent-weat10 on glove-6b-50d" in " ".join(r.stderr.split())
    # the same store holds both: --where shows any audit
    r = cli("--db", study / "s.duckdb", "audit", "show", "--where", "test = 'sent-weat10'", "--format", "json", cwd=study)
    assert r.exit_code == 0 and len(json.loads(r.stdout)["wording"]) >= 2, r.output


def test_audit_perturb_dry_run_uses_the_study_tests(study):
    r = cli("--db", study / "s.duckdb", "audit", "perturb", "--dry-run", "--format", "csv", cwd=study)
    assert r.exit_code == 0, r.output
    assert "may2019,may2019~syn-called,synonymous frame," in r.output


# ------------------------------------------------------------------ CEAT

def _import_corpus(folder, name: str, per_word: int) -> None:
    from conftest import FIXTURES

    files = sorted((FIXTURES / "corpus" / "inaugural").glob("*.txt"))
    args = ["--db", folder / "s.duckdb", "import", "corpus", *files, "--name", name, "-n", per_word, "--seed", "0"]
    for n in ("male_terms", "female_terms", "career", "family"):
        args += ["-w", n]
    r = cli(*args, cwd=folder)
    assert r.exit_code == 0, r.output
    r = cli("--db", folder / "s.duckdb", "test", "--x", f"male_terms@corpus:{name}", "--y", f"female_terms@corpus:{name}",
            "--a", f"career@corpus:{name}", "--b", f"family@corpus:{name}", "--context", "sentence", "--name",
            f"{name}-c6", cwd=folder)
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="module")
def inaug(study):
    """A corpus test in the study's store: up to 8 contexts a word (inaug-c6)."""
    _import_corpus(study, "inaug", 8)
    return "inaug-c6"


def test_audit_ceat_takes_the_study_and_stores_its_rows(study, inaug):
    con = store.connect(study / "s.duckdb", read_only=True)
    d, p, seed = store.one(con, "SELECT effect_size, p_value, r.seed FROM results r WHERE test = 'inaug-c6' "
                                "ORDER BY created_at DESC LIMIT 1")
    con.close()
    assert seed == 7  # `test` in the study folder: the study's seed
    r = cli("--db", study / "s.duckdb", "audit", "ceat", "-t", "inaug-c6", "--context", "sentence", "-n", 50,
            "--format", "json", cwd=study)
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["encoder"] == "glove-6b-50d" and row["seed"] == 7  # the study's encoder and seed, not minilm and 0
    assert abs(row["d"] - d) < 1e-12 and abs(row["p"] - p) < 1e-12  # the test's own d and p, as the study ran it
    con = store.connect(study / "s.duckdb", read_only=True)
    stored = store.one(con, "SELECT c.ces, c.ces_p, c.d, c.n_samples, c.seed, u.study, u.alpha, u.correction "
                            "FROM ceat_results c JOIN runs u USING (run_id) WHERE c.run_id = ?", [row["run_id"]])
    con.close()
    assert stored == (row["ces"], row["ces_p"], row["d"], 50, 7, "probe", 0.05, "bonferroni")


def test_audit_ceat_one_context_a_word_is_refused(study, tmp_path):
    """With one context a word, CEAT's N draws are one draw repeated: refused (issue 49, finding 13)."""
    _import_corpus(study, "once", 1)
    con = store.connect(study / "s.duckdb", read_only=True)
    before = snapshot(con)
    con.close()
    r = cli("--db", study / "s.duckdb", "audit", "ceat", "-t", "once-c6", "--context", "sentence", "-n", 50, cwd=study)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1 and "every word has one context" in lines[0], r.output
    con = store.connect(study / "s.duckdb", read_only=True)
    assert snapshot(con) == before
    con.close()


def test_ceat_single_context_by_hand():
    """The refusal is the statistics' own: identical draws (every word one context) are refused;
    one word with several contexts is enough to draw."""
    import numpy as np

    from stimkit.stats.ceat import combined_effect_size
    from stimkit.stats.weat import InvalidInput

    rng = np.random.default_rng(0)
    one = [[rng.normal(size=(1, 5)) for _ in range(4)] for _ in range(4)]
    with pytest.raises(InvalidInput, match="every word has one context"):
        combined_effect_size(one, 20, np.random.default_rng(1))
    one[0][0] = rng.normal(size=(3, 5))
    ce = combined_effect_size(one, 20, np.random.default_rng(1))
    assert ce.n_samples == 20 and len(set(np.round(ce.effects, 12))) > 1


# ------------------------------------------------------------------ debiasing

HARD = "glove-6b-50d,debias=hard"


def family_m(folder) -> int:
    import stimkit

    with stimkit.open(folder / "s.duckdb", read_only=True) as s:
        return s.results().family.m


def test_debias_compare_takes_the_study_and_stays_out_of_its_family(study):
    m = family_m(study)
    r = cli("--db", study / "s.duckdb", "debias", "compare", "sent-weat10", "-e", HARD, "--format", "csv", cwd=study)
    assert r.exit_code == 0, r.output
    import csv
    import io

    rows = {row["encoder"]: row for row in csv.DictReader(io.StringIO(r.stdout))}
    d, p, *_ = run_result(study)
    # the base's row is the study's result: its seed, budget and per-test units
    assert abs(float(rows["glove-6b-50d"]["d"]) - d) < 1e-12 and abs(float(rows["glove-6b-50d"]["p"]) - p) < 1e-12
    assert family_m(study) == m  # exploratory: the study's family is as it was (issue 48: m 4 -> 10)
    con = store.connect(study / "s.duckdb", read_only=True)
    kinds = store.rows(con, "SELECT DISTINCT r.kind, u.study, u.alpha, u.correction, u.seed FROM results r "
                            "JOIN runs u USING (run_id) WHERE starts_with(u.command, 'debias compare')")
    con.close()
    assert kinds == [("debias", "probe", 0.05, "bonferroni", 7)]
    r = cli("--db", study / "s.duckdb", "results", "--kind", "debias", "--format", "csv", "-c", "test,encoder,d",
            cwd=study)
    assert r.exit_code == 0 and sorted(row["encoder"] for row in csv.DictReader(io.StringIO(r.stdout))) == \
        ["glove-6b-50d", HARD], r.output


def test_debias_check_is_stored_with_its_run(study):
    r = cli("--db", study / "s.duckdb", "debias", "check", "-e", HARD, "--n", 30, "--resamples", 10, "--format", "csv",
            cwd=study)
    assert r.exit_code == 0, r.output
    con = store.connect(study / "s.duckdb", read_only=True)
    stored = store.rows(con, 'SELECT d."check", d.after, d.n_words, d.resamples, u.study, u.alpha, u.correction, u.seed '
                             "FROM debias_checks d JOIN runs u USING (run_id) ORDER BY d.created_at, d.\"check\"")
    con.close()
    checks = {c: (after, n, k, st, a, corr, seed) for c, after, n, k, st, a, corr, seed in stored}
    assert set(checks) >= {"clustering", "classifier (rbf)", "classifier (linear)", "neighbours", "wordsim353", "simlex999"}
    assert all(v[1:] == (30, 10, "probe", 0.05, "bonferroni", 7) for v in checks.values())
    import csv
    import io

    printed = {row["check"]: float(row["after"]) for row in csv.DictReader(io.StringIO(r.stdout[r.stdout.index("check,"):]))}
    assert all(abs(printed[c] - checks[c][0]) < 1e-12 for c in printed)


def _dimension(tmp_path, pairs) -> str:
    path = tmp_path / "dim.toml"
    path.write_text("definitional = " + json.dumps(pairs) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("pairs, named", [
    ([["woman", "man"], ["he", "he"]], "item 2 ['he', 'he'] pairs a word with itself"),
    ([["woman", "man"], ["she", "he"], ["woman", "man"]], "item 3 ['woman', 'man'] repeats item 1"),
    ([["woman", "man"], ["she", "he"], ["man", "woman"]], "item 3 ['man', 'woman'] repeats item 1"),
])
def test_dimension_self_and_repeated_pairs_are_refused(pairs, named, study, tmp_path):
    """Issue 49, finding 14: one line naming the pair, exit 1, nothing stored."""
    spec = f"glove-6b-50d,debias=hard:{_dimension(tmp_path, pairs)}"
    con = store.connect(study / "s.duckdb", read_only=True)
    before = snapshot(con)
    con.close()
    for args in (["test", "weat7", "-e", spec], ["debias", "check", "-e", spec]):
        r = cli("--db", study / "s.duckdb", *args, cwd=study)
        lines = r.output.strip().splitlines()
        assert r.exit_code == 1 and len(lines) == 1 and named in lines[0], r.output
    con = store.connect(study / "s.duckdb", read_only=True)
    assert snapshot(con) == before
    con.close()


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_non_finite_debias_parameter_is_refused(value, study):
    """Issue 49, finding 15: debias_alpha=inf passed `> 0` and stored NULL vectors."""
    r = cli("--db", study / "s.duckdb", "test", "weat7", "-e", f"glove-6b-50d,debias=hsr,debias_alpha={value}", cwd=study)
    lines = r.output.strip().splitlines()
    assert r.exit_code != 0 and len(lines) == 1 and "debias_alpha must be a finite number above 0" in lines[0], r.output


# ------------------------------------------------------------------ count bounds (issue 49, finding 9)

BOUNDS = [
    (["audit", "ceat", "-t", "no-such-test", "--samples", "100001"], "--samples must be between 2 and 100,000"),
    (["audit", "ceat", "-t", "no-such-test", "--samples", "1"], "--samples must be between 2 and 100,000"),
    (["debias", "check", "-e", HARD, "--n", "2501"], "--n must be between 2 and 2,500"),
    (["debias", "check", "-e", HARD, "--resamples", "10001"], "--resamples must be between 10 and 10,000"),
    (["audit", "perturb", "--budget", "10000001"], "--budget 10000001 is over the limit of 10,000,000"),
    (["audit", "perturb", "--max-variants", "1001"], "--max-variants must be between 1 and 1,000"),
    (["debias", "compare", "weat7", "-e", HARD, "--budget", "10000001"], "over the limit of 10,000,000"),
    (["audit", "show", "--top", "1001"], "--top must be between 1 and 1,000"),
]


@pytest.mark.parametrize("args, message", BOUNDS, ids=[" ".join(a[:2] + a[-2:-1]) for a, _ in BOUNDS])
def test_count_options_over_their_bound_exit_2(args, message, study):
    r = cli("--db", study / "s.duckdb", *args, cwd=study)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and message in lines[0], r.output


def test_count_bounds_are_stated_in_the_help():
    for args, stated in ((["audit", "ceat"], "100,000"), (["debias", "check"], "2,500"), (["debias", "check"], "10,000"),
                         (["audit", "perturb"], "10,000,000"), (["audit", "perturb"], "1,000"),
                         (["debias", "compare"], "10,000,000"), (["audit", "show"], "1,000")):
        r = cli(*args, "--help")
        assert stated in " ".join(r.output.split()), (args, stated)


# ------------------------------------------------------------------ a corpus test in a study with a baseline

def test_corpus_test_in_a_study_with_a_baseline_is_refused_up_front(study, inaug, tmp_path):
    """Issue 48: it failed with "baseline: unknown template set 'corpus:...'", exit 1, and stored
    the result anyway. A corpus test has no matched baseline: one line, exit 2, nothing stored;
    with --baseline 0 it runs."""
    with_baseline = tmp_path / "study.toml"
    with_baseline.write_text(STUDY.replace('correction = "bonferroni"', 'correction = "bonferroni"\nbaseline = 20'))
    con = store.connect(study / "s.duckdb", read_only=True)
    before = snapshot(con)
    con.close()
    r = cli("--db", study / "s.duckdb", "--study", with_baseline, "test", inaug, cwd=study)
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1, r.output
    assert f"test {inaug!r}: set X comes from a corpus" in lines[0] and "--baseline 0" in lines[0]
    con = store.connect(study / "s.duckdb", read_only=True)
    assert snapshot(con) == before
    con.close()
    r = cli("--db", study / "s.duckdb", "--study", with_baseline, "test", inaug, "--baseline", 0, cwd=study)
    assert r.exit_code == 0, r.output


# ------------------------------------------------------------------ WEFAT and baseline take the study's procedure

def test_wefat_takes_the_study_seed_budget_and_records_the_study(study):
    r = cli("--db", study / "s.duckdb", "wefat", "wefat-names", "--format", "json", cwd=study)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout.splitlines()[0])["summary"]
    options = json.loads(summary["options"]) if isinstance(summary["options"], str) else summary["options"]
    assert (summary["encoder"], options["seed"], options["budget"]) == ("glove-6b-50d", 7, 2000)
    con = store.connect(study / "s.duckdb", read_only=True)
    assert store.one(con, "SELECT study, alpha, correction, seed FROM runs WHERE run_id = ?", [summary["run_id"]]) == \
        ("probe", 0.05, "bonferroni", 7)
    con.close()


def test_baseline_takes_the_study_per_test_options(study):
    """`baseline` skipped the study's [options."<test>"] (issue 48): its procedure is now the
    run's, units included."""
    r = cli("--db", study / "s.duckdb", "baseline", "sent-weat10", "--sets", 3, "--format", "json", cwd=study)
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    con = store.connect(study / "s.duckdb", read_only=True)
    procedure = json.loads(store.one(con, "SELECT procedure FROM baselines WHERE baseline_id = ?", [row["baseline_id"]])[0])
    con.close()
    assert (procedure["options"]["units"], procedure["options"]["budget"]) == ("words", 2000)


def test_the_one_resolver():
    """run.options.procedure: the study's options and alpha, typed values over them, per-test
    tables under a typed flag, encoders typed > the study's > the command's own."""
    from stimkit.run.options import Options, procedure
    from stimkit.study.study import parse

    st = parse({"name": "s", "tests": ["t*"], "encoders": ["a", "b"], "alpha": 0.05, "correction": "bh",
                "options": {"seed": 7, "budget": 2000, "t1": {"units": "sentences", "alternative": "less"}}})
    p = procedure(st, {"seed": None, "budget": 500, "clustered": False}, None, ("minilm",))
    assert p.values == {"seed": 7, "budget": 500, "alpha": 0.05} and p.encoders == ("a", "b")
    assert p.run_fields() == {"study": "s", "alpha": 0.05, "correction": "bh"}
    assert p.for_test("t1") == {"units": "sentences", "alternative": "less"} and p.for_test("u") == {}
    typed = procedure(st, {"units": "words"}, ["c"])
    assert typed.for_test("t1") == {"alternative": "less"} and typed.encoders == ("c",)
    assert procedure(st, {"clustered": True}).for_test("t1") == {"alternative": "less"}  # --clustered is --units words
    alone = procedure(None, {}, None, ("minilm",))
    assert alone.values == {} and alone.encoders == ("minilm",) and alone.per_test() is None
    assert alone.options() == Options() and alone.alpha is None
    assert p.analysis().cuts == 1 and p.options(cuts=3).cuts == 3


# ------------------------------------------------------------------ the report

def test_report_has_ceat_and_debias_check_sections(study, inaug, tmp_path):
    import re

    for args in (["audit", "ceat", "-t", inaug, "--context", "sentence", "-n", 30],
                 ["debias", "check", "-e", HARD, "--n", 30, "--resamples", 10]):
        r = cli("--db", study / "s.duckdb", *args, "--format", "csv", cwd=study)
        assert r.exit_code == 0, r.output
    con = store.connect(study / "s.duckdb", read_only=True)
    ces, n = store.one(con, "SELECT ces, n_samples FROM ceat_results ORDER BY created_at DESC LIMIT 1")
    after = store.one(con, "SELECT after FROM debias_checks WHERE \"check\" = 'clustering' ORDER BY created_at DESC "
                           "LIMIT 1")[0]
    con.close()
    r = cli("--db", study / "s.duckdb", "report", "--out", tmp_path / "rep", "--format", "html", cwd=study)
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep" / "report.html").read_text()
    assert '<h2 id="ceat">CEAT</h2>' in html and '<h2 id="debias-checks">Debiasing checks</h2>' in html
    ceat = html[html.index('id="ceat-table"'):]
    ceat = ceat[:ceat.index("</table>")]
    cells = re.findall(r"<td>([^<]*)</td>", ceat)
    # the latest row of the test, its CES with its sign, N as stored
    assert f"{ces:+.3g}" in cells and str(n) in cells and inaug in cells
    checks = html[html.index('id="debias-checks-table"'):]
    checks = checks[:checks.index("</table>")]
    assert "clustering" in checks and f"<td>{after:.3g}</td>" in checks
    # the tables/ files keep every digit
    import csv

    with open(tmp_path / "rep" / "tables" / "ceat.csv") as f:
        assert any(float(row["ces"]) == ces for row in csv.DictReader(f))
    with open(tmp_path / "rep" / "tables" / "debias_checks.csv") as f:
        assert any(row["check"] == "clustering" and float(row["after"]) == after for row in csv.DictReader(f))
    # a store without them: no such sections
    import shutil

    bare = tmp_path / "bare.duckdb"
    shutil.copy(study / "s.duckdb", bare)
    con = store.connect(bare)
    con.execute("DELETE FROM ceat_results")
    con.execute("DELETE FROM debias_checks")
    con.close()
    r = cli("--db", bare, "report", "--out", tmp_path / "rep2", "--format", "html", cwd=study)
    assert r.exit_code == 0, r.output
    html = (tmp_path / "rep2" / "report.html").read_text()
    assert 'id="ceat"' not in html and 'id="debias-checks"' not in html
