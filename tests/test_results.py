"""Running tests into the store, multiple-testing corrections in SQL, results and checks."""

import json

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit.analysis import consistency, families as analysis
from stimkit.catalog import definitions as catalog
from stimkit.views import results as views_results
from stimkit.encoders import embeddings
from stimkit.run import plan
from stimkit.run.execute import execute
from stimkit.run.options import Options
from stimkit.stats import sampler
from stimkit import stats, store
from stimkit.cli import app
from stimkit.encoders import resolve

from conftest import snapshot

cli = CliRunner()


# ----------------------------------------------------------------- corrections, independently

def holm_python(p, alpha):
    order = np.argsort(p, kind="stable")
    m = len(p)
    reject = np.zeros(m, bool)
    for rank, i in enumerate(order, start=1):  # the paper's step-down rule, literally
        if p[i] > alpha / (m - rank + 1):
            break
        reject[i] = True
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - rank + 1) * p[i]))
        adjusted[i] = running
    return adjusted, reject


def step_up_python(p, factor=1.0):
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, min(1.0, factor * m * p[i] / rank))
        adjusted[i] = running
    return adjusted


@pytest.fixture
def family_con(tmp_path):
    con = store.connect(tmp_path / "c.duckdb")
    rng = np.random.default_rng(11)
    p = np.concatenate([rng.uniform(0, 0.002, 6), rng.uniform(0, 1, 30), [0.0005, 0.0005, 0.2, 0.2]])
    con.execute("INSERT INTO runs (run_id, seed, stimkit_version) VALUES ('r1', 0, 'x'), ('r2', 0, 'x')")
    rows = [(f"r1/t{i:02d}/f", "r1", f"t{i:02d}", p[i]) for i in range(len(p))] + [("r2/other/f", "r2", "other", 1e-9)]
    for rid, run, test, pv in rows:
        con.execute("INSERT INTO results (result_id, run_id, test, test_source, encoder, model, fingerprint, context, "
                    "n_dropped_oov, n_balanced_away, ddof, clustered, stimkit_version, p_value, effect_size) "
                    "VALUES (?, ?, ?, 'catalog', 'e', 'e', 'f', 'word', 0, 0, 1, false, 'x', ?, 0.5)", [rid, run, test, pv])
    return con, p


@pytest.mark.parametrize("method", ["holm", "bh", "by"])
def test_sql_corrections_equal_python(family_con, method):
    con, p = family_con
    analysis.define_family(con, "run_id = 'r1'", alpha=0.01)
    df = analysis.corrected(con, method).sort("test")
    assert df.height == len(p)
    if method == "holm":
        expected, reject = holm_python(p, 0.01)
        assert df["rejected"].to_list() == reject.tolist()
    else:
        factor = 1.0 if method == "bh" else sum(1 / i for i in range(1, len(p) + 1))
        expected = step_up_python(p, factor)
        assert df["rejected"].to_list() == (expected <= 0.01).tolist()
    assert np.allclose(df["p_adjusted"].to_numpy(), expected, rtol=1e-12)


def test_family_is_chosen_by_where(family_con):
    con, p = family_con
    assert analysis.define_family(con, "run_id = 'r2'").m == 1
    assert analysis.define_family(con).m == len(p) + 1  # every hypothesis over the whole store
    assert analysis.define_family(con, run="r1").m == len(p)
    with pytest.raises(Exception, match="no results in .* where test = 'nope'"):
        analysis.define_family(con, "test = 'nope'")


# ----------------------------------------------------------------- running tests

@pytest.fixture(scope="module")
def glove():
    return resolve("glove-6b-50d")


def run(con, names, enc, opts=Options(), command="t"):
    """The tests on one encoder in one run: planned, encoded, executed."""
    tests = [catalog.get(con, n) for n in names]
    planned = plan.make(con, tests, [enc.spec], opts)
    for e, stimuli in planned.encodings:
        embeddings.encode_missing(con, e, stimuli)
    report = execute(con, planned, command)
    assert not report.failures, report.failures
    assert [r.test for r in report.results] == names
    return report.run_id, report.results


def test_result_and_items_trace_back_to_stimuli(catalog_con, glove):
    run_id, (row,) = run(catalog_con, ["weat6"], glove)
    assert row.p_method == "exact" and row.n_x == row.n_y == 8
    items = store.frame(catalog_con, "SELECT * FROM result_items WHERE result_id = ? ORDER BY role, ordinal", [row.result_id])
    assert items.height == 32
    # recompute s(w, A, B) for every target by hand from the stored vectors
    vecs = {}
    for role in "xyab":
        frame = catalog.fetch(catalog_con, catalog.get(catalog_con, "weat6").sql(role))
        vecs[role] = glove.encode(frame["stimulus"].to_list(), [None] * frame.height).vectors
    s = stats.association(np.concatenate([vecs["x"], vecs["y"]]), vecs["a"], vecs["b"])
    got = items.filter(pl.col("role").is_in(["X", "Y"])).sort("role", "ordinal")["association"].to_numpy()
    assert np.allclose(got, s, atol=1e-6)
    assert row.effect_size == pytest.approx(stats.effect_size(s[:8], s[8:]))
    assert items.filter(pl.col("role") == "X")["word"].to_list() == ["John", "Paul", "Mike", "Kevin", "Steve", "Greg", "Jeff", "Bill"]
    stored = store.frame(catalog_con, "SELECT * FROM results WHERE result_id = ?", [row.result_id]).row(0, named=True)
    assert stored["set_versions"] and stored["context"] == "word" and stored["ddof"] == 1 and stored["budget"] == 100_000


def test_oov_and_balancing_are_recorded(catalog_con, glove):
    _, (row,) = run(catalog_con, ["weat1"], glove)
    items = store.frame(catalog_con, "SELECT * FROM result_items WHERE result_id = ?", [row.result_id])
    dropped = items.filter(pl.col("dropped").is_not_null())
    assert dropped.filter(pl.col("dropped").str.starts_with("oov"))["stimulus"].to_list() == ["gladiola"]
    assert dropped.filter(pl.col("dropped") == "balanced").height == 1  # one insect cut to match 24 flowers
    assert row.n_x == row.n_y == 24 and row.n_dropped_oov == 1 and row.n_balanced_away == 1


def test_same_seed_same_result_whatever_ran_before(catalog_con, glove):
    _, first = run(catalog_con, ["sent-weat9", "weat3"], glove, Options(seed=3, budget=20_000))
    _, second = run(catalog_con, ["weat3", "weat1", "sent-weat9"], glove, Options(seed=3, budget=20_000))
    by_test = {r.test: r for r in second}
    for r in first:
        assert r.p_value == by_test[r.test].p_value
        assert r.effect_size == by_test[r.test].effect_size
    _, other_seed = run(catalog_con, ["sent-weat9"], glove, Options(seed=4, budget=20_000))
    assert other_seed[0].p_value != by_test["sent-weat9"].p_value  # p near 0.77: another draw moves it


def test_clustered_and_bootstrap_options_are_recorded(catalog_con, glove):
    _, (row,) = run(catalog_con, ["sent-weat6"], glove, Options(clustered=True, bootstrap=200))
    assert row.p_method == "exact-clustered" and row.clustered  # 16 words: C(16, 8) partitions
    assert row.ci_low < row.effect_size < row.ci_high
    assert json.loads(row.options)["bootstrap"] == 200
    assert json.loads(row.options)["sampler"] == sampler.NAME   # which algorithm drew the partitions


def test_a_result_is_its_parts_and_its_row_is_the_stored_row(catalog_con, glove):
    """Result.row() is the `results` row: every column once, from exactly one part (a new
    column is one field of one part), the values as stored; the progress event carries the
    result's own values."""
    from dataclasses import fields

    from stimkit.run.rows import PARTS, Result, ResultEvent

    tests = [catalog.get(catalog_con, n) for n in ("weat6", "sent-weat7")]
    planned = plan.make(catalog_con, tests, [glove.spec], Options(metrics=("weat", "semaxis"), budget=2000))
    for e, stimuli in planned.encodings:
        embeddings.encode_missing(catalog_con, e, stimuli)
    events = []
    report = execute(catalog_con, planned, "t", on_result=events.append)
    _, cut = run(catalog_con, ["sent-weat7"], glove, Options(cuts=3, budget=2000))
    results = [*report.results, *cut]
    assert len(results) == 5 and cut[0].cuts == 3 and cut[0].crossed_d is not None and results[1].metric == "semaxis"

    columns = [c for (c,) in catalog_con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'results'").fetchall()]
    stored = [f.name for cls in PARTS.values() for f in fields(cls) if f.metadata.get("stored", True)]
    assert len(stored) == len(set(stored)) == len(columns) - 1  # each column in one part, once
    assert set(columns) - set(stored) == {"created_at"}  # the store's insert time: no field of a result
    assert [f.name for f in fields(Result)] == list(PARTS)
    for res in results:
        row = res.row()
        assert list(row) == stored
        got = catalog_con.execute(f"SELECT {', '.join(stored)} FROM results WHERE result_id = ?", [res.result_id]).fetchone()
        assert dict(zip(stored, got)) == row
        assert all(getattr(res, c) == getattr(getattr(res, part), c) for part, cls in PARTS.items() for c in
                   (f.name for f in fields(cls)) if c != "items")  # res.p_value reads its part

    assert [(e.done, e.total) for e in events] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    shown = [f.name for f in fields(ResultEvent)][2:]
    for e, res in zip(events, report.results):
        assert [getattr(e, c) for c in shown] == [getattr(res, c) for c in shown]
    assert events[0].effect_size == results[0].effect_size != results[1].effect_size is None


def cli_run(db, *args):
    return cli.invoke(app, ["--db", str(db), *args])


@pytest.fixture
def store_copy(catalog_db, tmp_path):
    import shutil
    path = tmp_path / "copy.duckdb"
    shutil.copy(catalog_db, path)
    return path


def test_cli_test_results_and_formats(store_copy):
    r = cli_run(store_copy, "test", "weat7", "weat8", "sent-weat7", "sent-weat8", "-e", "glove-6b-50d", "--budget", "5000")
    assert r.exit_code == 0, r.output
    assert "4 results from 4 tests x 1 encoder, 0 failures.\n    see `stimkit results --run " in r.output
    r = cli_run(store_copy, "results", "--format", "sentbias")
    lines = r.stdout.strip().splitlines()
    assert lines[0].split("\t") == views_results.SENTBIAS_COLUMNS
    assert len(lines) == 5 and lines[1].startswith("glove-6b-50d\t\t")
    doc = json.loads(cli_run(store_copy, "results", "--format", "json").stdout)
    data = doc["rows"]
    assert doc["family"]["m"] == 4 and doc["correction"] == {"method": "holm", "alpha": 0.01}
    assert {d["test"] for d in data} == {"weat7", "weat8", "sent-weat7", "sent-weat8"}
    assert all("p_adjusted" in d and "rejected" in d and d["n_x"] for d in data)
    r = cli_run(store_copy, "results", "--table")
    assert "weat7" in r.output and "glove-6b-50d" in r.output
    con = store.connect(store_copy)
    selected = sum(f.height for t in ("weat7", "weat8", "sent-weat7", "sent-weat8")
                   for f in catalog.fetch_sets(con, catalog.get(con, t)).values())
    con.close()
    r = cli_run(store_copy, "query", "SELECT count(*) AS n FROM result_items WHERE result_id IN (SELECT result_id FROM family)",
                "--format", "csv")
    assert r.stdout.splitlines() == ["n", str(selected)]  # every selected stimulus, dropped ones included
    r = cli_run(store_copy, "query", "holm", "--format", "csv")
    assert r.exit_code == 0 and "p_adjusted" in r.output.splitlines()[0]
    r = cli_run(store_copy, "check")
    assert r.exit_code == 0 and "C7 vs C8" in r.output and "comparisons" in r.stderr


def test_check_finds_a_c7_c8_disagreement(family_con):
    con, _ = family_con
    con.execute("UPDATE results SET test = 'weat7', effect_size = 1.2, p_value = 1e-5 WHERE test = 't00'")
    con.execute("UPDATE results SET test = 'weat8', effect_size = -0.3, p_value = 0.4 WHERE test = 't01'")
    analysis.define_family(con, "run_id = 'r1'")
    df = consistency.consistency(con, 0.01)
    row = df.filter(pl.col("check_name") == "C7 vs C8").row(0, named=True)
    # one significant, one not: the decision heuristics' findings are a note (a violation is a tested claim)
    assert row["tests"] == "weat7 / weat8" and row["verdict"] == "note" and not row["heuristic"]
    assert row["reason"] == ("different decisions at alpha; p-values 2+ orders of magnitude apart; "
                             "opposite signs of d, not both significant; d differ by 0.5 or more")
    assert row["result_ids"] == ["r1/t00/f", "r1/t01/f"]


def test_adhoc_test_with_sql_sets(store_copy):
    x = "SELECT * FROM current_stimuli WHERE set_name = 'flowers@may2019' AND template_id LIKE 'may2019/count_noun:3'"
    y = "SELECT * FROM current_stimuli WHERE set_name = 'insects@may2019' AND template_id LIKE 'may2019/count_noun:3'"
    r = cli_run(store_copy, "test", "--x", x, "--y", y, "--a", "pleasant@word", "--b", "unpleasant@word", "--name", "flowers-this-is-a")
    assert r.exit_code == 0, r.output
    con = store.connect(store_copy)
    row = store.one(con, "SELECT n_x, n_y, test_source FROM results WHERE test = 'flowers-this-is-a'")
    assert row == (25, 25, "adhoc")


@pytest.mark.parametrize("args, message, code", [
    (["test", "--x", "SELECT * FROM current_stimuli WHERE word = 'zzz'", "--y", "flowers@word", "--a", "pleasant@word", "--b", "unpleasant@word"],
     "failed: test adhoc, encoder *: test 'adhoc' set X: selects no stimuli", 1),
    (["test", "--x", "flowers@word", "--y", "insects@word"], "needs all four of --x --y --a --b", 2),
    (["test", "weat1", "-e", "nosuch"], "failed: test *, encoder nosuch: unknown encoder 'nosuch'", 1),
    (["test", "weat1", "--method", "magic"], "unknown p-value method 'magic'", 2),
    (["test", "weat1", "--clustered", "--method", "parametric"], "--clustered has no parametric form", 2),
    (["test", "sent-weat1", "--cuts", "3", "--balance", "none"], "--cuts needs a random balance", 1),  # a test the run refuses: its failure line, exit 1
    (["test", "nosuchtest*"], "no test matches 'nosuchtest*'", 2),
    (["results", "--where", "test = 'none'"], "no results in the latest result per hypothesis", 1),
    (["results", "--correct", "bonferonni"], "--correct 'bonferonni': unknown correction", 2),
    (["results", "--alpha", "2"], "--alpha must be between 0 and 1", 2),
    (["results", "--run", "nosuchrun"], "--run nosuchrun: no such run", 2),
    (["query", "SELEKT 1"], "query failed", 2),
])
def test_bad_input_leaves_no_results(store_copy, args, message, code):
    cli_run(store_copy, "test", "weat6", "--budget", "1000")
    con = store.connect(store_copy)
    before = snapshot(con)
    con.close()
    r = cli_run(store_copy, *args)
    assert r.exit_code == code, r.output
    assert message in r.stderr.splitlines()[0] and r.stdout == "", r.output
    con = store.connect(store_copy)
    assert snapshot(con) == before


# ----------------------------------------------------------------- paper_test (was `family`)

def test_a_store_from_before_migration_023_reads_its_paper_test(tmp_path, monkeypatch):
    """A test's row in its paper was the column `family` (migrations 003-022): 023 renames it
    `paper_test`, keeping every value, and the views that named it read on."""
    import stimkit
    from stimkit.store import connection

    real = connection.migrations
    monkeypatch.setattr(connection, "migrations", lambda: [(n, p) for n, p in real() if n < 23])
    path = tmp_path / "old.duckdb"
    con = store.connect(path)
    con.execute("INSERT INTO runs (run_id, command, seed, stimkit_version) VALUES ('r', 'test', 0, 'x')")
    for test, row, p in (("weat7", "C7", 0.001), ("weat8", "C8", 0.2), ("mine", None, 0.5)):
        con.execute("""INSERT INTO results (result_id, run_id, test, test_source, family, encoder, model, fingerprint,
            context, n_dropped_oov, n_balanced_away, ddof, clustered, stimkit_version, p_value, min_p, p_method,
            effect_size, alternative) VALUES (?, 'r', ?, 'catalog', ?, 'e', 'e', 'f', 'word', 0, 0, 1, false, 'x', ?,
            1e-5, 'sampled', 1.0, 'greater')""", [f"r/{test}", test, row, p])
        con.execute("INSERT INTO result_items (result_id, role, ordinal, stimulus) VALUES (?, 'X', 0, 'rose')", [f"r/{test}"])
    old = {"weat7": "C7", "weat8": "C8", "mine": None}
    assert dict(store.rows(con, "SELECT test, family FROM results_with_items")) == old  # the schema before 023
    con.close()
    monkeypatch.setattr(connection, "migrations", real)
    con = store.connect(path)  # a writing open migrates
    assert store.schema_version(con) == max(n for n, _ in real()) >= 23
    columns = {d[0] for d in con.execute("SELECT * FROM results LIMIT 0").description}
    assert "paper_test" in columns and "family" not in columns
    for view in ("results", "result_hypotheses", "latest_results", "results_with_items", "latest_results_with_items"):
        assert dict(store.rows(con, f"SELECT test, paper_test FROM {view}")) == old, view
    con.close()
    with stimkit.open(path, read_only=True) as s:
        df = s.results()
        assert dict(zip(df["test"], df["paper_test"])) == old and df.family.m == 3  # `family`: the correction's


def test_a_catalog_file_that_says_family_reads_it_as_paper_test(tmp_path):
    """`family` is paper_test's old name: a user's catalog file that still says it reads the same."""
    from stimkit import UsageError

    sets = 'sets = ["flowers@word", "insects@word", "pleasant@word", "unpleasant@word"]'
    (tmp_path / "old.toml").write_text(f'["mine-old"]\n{sets}\nfamily = "C1"\n\n["mine-new"]\n{sets}\npaper_test = "C1"\n')
    tests = catalog.load_dir(tmp_path)
    assert tests["mine-old"].paper_test == tests["mine-new"].paper_test == "C1"
    assert catalog.to_toml(tests["mine-old"]).count("paper_test = \"C1\"") == 1  # written back under the new name
    (tmp_path / "old.toml").write_text(f'["both"]\n{sets}\nfamily = "C1"\npaper_test = "C2"\n')
    with pytest.raises(UsageError, match=r"old.toml: test 'both': `family` is the old name of `paper_test`"):
        catalog.load_dir(tmp_path)
