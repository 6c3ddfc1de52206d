"""The library's face: stimkit.weat on arrays, stimkit.open -> Store, and the CLI as a thin layer over it."""

import json
import os
import shutil
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

import stimkit
from stimkit import stats, store
from stimkit.cli import app

REPO = Path(__file__).resolve().parent.parent


def brute_force(X, Y, A, B):
    """d and the one-sided p over every equal-size partition, from the definitions."""
    def cos(u, v):
        return u @ v / np.linalg.norm(u) / np.linalg.norm(v)

    def s(w):
        return np.mean([cos(w, a) for a in A]) - np.mean([cos(w, b) for b in B])

    W = np.concatenate([X, Y])
    sw = np.array([s(w) for w in W])
    n = len(X)
    stat = sw[:n].sum() - sw[n:].sum()
    null = [sw[list(i)].sum() - sw[[j for j in range(len(W)) if j not in i]].sum() for i in combinations(range(len(W)), n)]
    d = (sw[:n].mean() - sw[n:].mean()) / sw.std(ddof=1)
    return d, np.mean(np.array(null) >= stat - 1e-12), len(null)


def test_weat_agrees_with_brute_force():
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(5, 4)) + 0.3, rng.normal(size=(5, 4))
    A, B = rng.normal(size=(4, 4)) + 0.3, rng.normal(size=(3, 4))
    res = stimkit.weat(X, Y, A, B)
    d, p, partitions = brute_force(X, Y, A, B)
    assert res.method == "exact" and res.n_partitions == partitions == 252
    assert res.effect_size == pytest.approx(d, abs=1e-12) and res.pvalue == pytest.approx(p, abs=1e-15)
    assert res.min_p == 1 / 252 and len(res.associations) == 10


def test_weat_sampled_null_distribution_and_seed():
    rng = np.random.default_rng(6)
    X, Y, A, B = (rng.normal(size=(30, 8)) for _ in range(4))
    res = stimkit.weat(X, Y, A, B, method="sampled", n_samples=2000, seed=3)
    assert res.null_distribution.shape == (1999,)
    assert res.pvalue == pytest.approx((1 + np.sum(res.null_distribution >= res.statistic - 1e-9)) / 2000)
    assert stimkit.weat(X, Y, A, B, method="sampled", n_samples=2000, seed=3).pvalue == res.pvalue
    assert stimkit.weat(Y, X, A, B, seed=3).effect_size == pytest.approx(-res.effect_size)


@pytest.mark.parametrize("change, message", [
    (lambda X, Y, A, B: (np.zeros_like(X), Y, A, B), "zero vector"),
    (lambda X, Y, A, B: (X[:1], Y[:1], A, B), "at least 2 per target set"),
    (lambda X, Y, A, B: (X, X.copy(), A, B), "X and Y hold the same items"),
    (lambda X, Y, A, B: (np.ones_like(X), np.ones_like(Y) * 2, A, B), "d is undefined"),
    (lambda X, Y, A, B: (X, Y, A[:, :2], B), "different sizes"),
])
def test_weat_refuses_inputs_without_meaning(change, message):
    rng = np.random.default_rng(7)
    args = change(*(rng.normal(size=(4, 3)) for _ in range(4)))
    with pytest.raises(stats.InvalidInput, match=message):
        stimkit.weat(*args)


def comparable(df):
    drop = ["result_id", "run_id", "seconds", "created_at", "options", "hypothesis"]
    return df.drop([c for c in drop if c in df.columns]).sort("test", "encoder").to_dicts()


def test_cli_and_library_give_identical_rows(catalog_db, tmp_path):
    via_cli, via_lib = tmp_path / "cli.duckdb", tmp_path / "lib.duckdb"
    shutil.copy(catalog_db, via_cli)
    shutil.copy(catalog_db, via_lib)
    r = CliRunner().invoke(app, ["--db", str(via_cli), "test", "weat6", "sent-weat9", "--seed", "3", "--budget", "5000"])
    assert r.exit_code == 0, r.output
    with stimkit.open(via_lib) as s:
        report = s.test(["weat6", "sent-weat9"], encoders=["glove-6b-50d"], seed=3, budget=5000)
        assert not report.failures and len(report.results) == 2
    with stimkit.open(via_cli, read_only=True) as a, stimkit.open(via_lib, read_only=True) as b:
        ra, rb = a.results(), b.results()
        assert comparable(ra) == comparable(rb)
        assert ra.family.m == rb.family.m == 2


def cli_json(db, *args):
    r = CliRunner().invoke(app, ["--db", str(db), *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_every_writing_command_is_its_store_method(catalog_db, tmp_path):
    """audit compare, wefat and the statistics of run store the same numbers from the CLI
    as from their Store methods; the read commands print what their methods return."""
    via_cli, via_lib = tmp_path / "cli.duckdb", tmp_path / "lib.duckdb"
    shutil.copy(catalog_db, via_cli)
    shutil.copy(catalog_db, via_lib)
    compare = ["-t", "sent-weat6", "-e", "glove-6b-50d", "-s", "may2019", "-s", "word_first", "--budget", "2000", "--seed", "4"]
    cli_compare = cli_json(via_cli, "audit", "compare", *compare)
    cli_wefat = cli_json(via_cli, "wefat", "wefat-names", "-e", "glove-6b-50d", "--budget", "2000")
    r = CliRunner().invoke(app, ["--db", str(via_cli), "audit", "templates", "-t", "sent-weat6", "-e", "glove-6b-50d",
                                 "--budget", "2000"])
    assert r.exit_code == 0, r.output
    with stimkit.open(via_lib) as s:
        _, lib_compare = s.audit_compare(["sent-weat6"], ["may2019", "word_first"], ["glove-6b-50d"], budget=2000, seed=4)
        lib_wefat = s.wefat("wefat-names", "glove-6b-50d", budget=2000)
        s.audit(["sent-weat6"], ["glove-6b-50d"], budget=2000)
    assert cli_compare == lib_compare.to_dicts() and len(cli_compare) == 2
    assert {k: cli_wefat["summary"][k] for k in ("r", "p_value", "n")} == {k: getattr(lib_wefat, k) for k in ("r", "p_value", "n")}
    assert [w["association"] for w in cli_wefat["words"]] == [w.association for w in lib_wefat.items]
    with stimkit.open(via_cli, read_only=True) as a, stimkit.open(via_lib, read_only=True) as b:
        for method, args in (("audits", ()), ("wefat_results", ()), ("encoders", ()),
                             # every stored result (audits and comparisons are not in latest_results: kind test only)
                             ("query", ("SELECT test, effect_size FROM results WHERE test LIKE $t ORDER BY ALL",
                                        {"t": "sent-weat6%"}))):
            left, right = getattr(a, method)(*args), getattr(b, method)(*args)
            left, right = (x[0] if isinstance(x, tuple) else x for x in (left, right))
            keep = [c for c in left.columns if c not in ("audit_id", "result_id", "run_id", "created_at", "seconds", "options")]
            assert left.height > 0 and left.select(keep).to_dicts() == right.select(keep).to_dicts(), method
        rows = cli_json(via_cli, "query", "SELECT test, effect_size FROM results WHERE test LIKE $t ORDER BY ALL",
                        "--param", "t=sent-weat6%")
        assert rows == a.query("SELECT test, effect_size FROM results WHERE test LIKE $t ORDER BY ALL",
                               {"t": "sent-weat6%"}).to_dicts()


def test_a_read_only_store_refuses_writes(catalog_db, tmp_path):
    path = tmp_path / "ro.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path, read_only=True) as s:
        with pytest.raises(stimkit.StimkitError, match="writes to the store"):
            s.test(["weat6"])
        assert s.sets("flowers").height >= 2


def test_test_sets_counts_what_each_query_selects(catalog_db):
    """sent-weat9's sets hold the published stimuli (before the catalog's cut of Y)."""
    from conftest import published

    with stimkit.open(catalog_db, read_only=True) as s:
        test, sizes = s.test_sets("sent-weat9")
    doc = published("sent-weat9")
    assert test.name == "sent-weat9" and sizes["role"].to_list() == ["X", "Y", "A", "B"]
    assert sizes["error"].null_count() == 4
    assert sizes["n_stimuli"][0] == len(doc["targ1"]["examples"])
    assert sizes["n_stimuli"][2:].to_list() == [len(doc["attr1"]["examples"]), len(doc["attr2"]["examples"])]


def test_opening_a_missing_store_read_only_creates_nothing(tmp_path):
    with pytest.raises(stimkit.UsageError, match="no store at"):
        stimkit.open(tmp_path / "missing.duckdb", read_only=True)
    assert not (tmp_path / "missing.duckdb").exists()


def test_views_answer_plain_sql(catalog_db, tmp_path):
    """A user of the plain duckdb client needs no SET and no table names."""
    path = tmp_path / "views.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        s.test(["weat6", "sent-weat6"], encoders=["glove-6b-50d"], budget=1000)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM latest_results").fetchall()[0][0] == 2
        n_items = con.execute("SELECT count(*) FROM results_with_items WHERE test = 'weat6'").fetchall()[0][0]
        assert n_items == 32
        vec = con.execute("SELECT vector, dim FROM stimulus_vectors WHERE encoder = 'glove-6b-50d' AND stimulus = 'John' "
                      "LIMIT 1").fetchall()[0]
        assert vec[1] == 50 and len(vec[0]) == 50
        pivot = con.sql("PIVOT (SELECT test, encoder, round(effect_size, 2) AS d FROM latest_results) "
                        "ON encoder USING first(d)").fetchall()
        assert len(pivot) == 2
    finally:
        con.close()


def test_a_reader_waits_for_a_writer_and_gets_results(catalog_db, tmp_path):
    """DuckDB lets one process write or many read: the reader waits (bounded) and says why."""
    path = tmp_path / "busy.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        s.test(["weat6"], encoders=["glove-6b-50d"], budget=1000)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # The writer holds the file until the reader says it waits (evidence, not a fixed time):
    # on any machine, however loaded, the reader finds the file held.
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, duckdb; con = duckdb.connect(sys.argv[1]); "
        "con.execute('BEGIN'); con.execute(\"UPDATE runs SET command = command\"); print('holding', flush=True); "
        "sys.stdin.readline(); con.execute('COMMIT')"),
        str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert holder.stdout.readline().strip() == "holding"
    reader = subprocess.Popen([sys.executable, "-m", "stimkit", "--db", str(path), "results", "--format", "csv"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    waiting = reader.stderr.readline()
    holder.communicate("release\n", timeout=60)
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, waiting + err
    assert "waiting for" in waiting and out.splitlines()[0].startswith("result_id,")
    assert len(out.splitlines()) == 2


# two sentence tests: some 700 texts, a few seconds of MiniLM on one thread, several appends
READERS_IN = ["sent-weat6", "sent-weat7"]

# The command, its store writer paused after its first append (committed, the file closed)
# until the test says go: the reader's turn comes mid-encode on any machine, however fast.
PAUSED_AFTER_FIRST_APPEND = """
import sys
from stimkit import cli
from stimkit.encoders import embeddings
written = embeddings.Writer._written
def pause_after_first(self, rows):
    written(self, rows)
    if self.written == rows:
        print(f"appended {rows} of {self.total}", file=sys.stderr, flush=True)
        sys.stdin.readline()
embeddings.Writer._written = pause_after_first
cli.main()
"""


@pytest.mark.parametrize("command", [["encode", "-e", "minilm", "--batch-size", "256", *(f"--test={t}" for t in READERS_IN)],
                                     ["test", *READERS_IN, "-e", "minilm", "--budget", "1000", "-q"],
                                     ["run", "{study}", "-e", "minilm", "--budget", "1000", "--format", "csv"],
                                     ["audit", "templates", *(f"-t{t}" for t in READERS_IN), "-e", "minilm", "--budget", "1000"]])
def test_a_long_encode_lets_readers_in(catalog_db, tmp_path, command):
    """While the model runs (in `encode`, or in the encode phase of `test`, `run` or `audit`), the store is closed:
    another process reads it (giving up after 2 s of waiting for the lock) and sees the
    vectors written so far, before the command ends."""
    path = tmp_path / "encoding.duckdb"
    shutil.copy(catalog_db, path)
    study = tmp_path / "readers-in.toml"
    study.write_text(f'name = "readers-in"\ntests = {READERS_IN!r}\n'.replace("'", '"'))
    command = [str(study) if c == "{study}" else c for c in command]
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    writer = subprocess.Popen([sys.executable, "-c", PAUSED_AFTER_FIRST_APPEND, "--db", str(path), *command], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        paused = next((line for line in writer.stderr if line.startswith("appended ")), None)
        assert paused is not None, f"the command ended (exit {writer.wait()}) before its first append"
        reader = subprocess.run([sys.executable, "-m", "stimkit", "--db", str(path), "query",
                                 "SELECT count(*) AS n FROM embeddings_384", "--format", "csv"],
                                env={**env, "STIMKIT_LOCK_TIMEOUT": "2"}, capture_output=True, text=True, timeout=120)
        out, err = writer.communicate("go\n", timeout=300)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert reader.returncode == 0, reader.stderr
    assert writer.returncode == 0, err
    seen_midway = int(reader.stdout.splitlines()[1])
    with stimkit.open(path, read_only=True) as s:
        total = s.query("SELECT count(*) AS n FROM embeddings_384")["n"][0]
    assert 0 < seen_midway < total
    assert seen_midway == int(paused.split()[1])  # exactly what the writer had committed


def test_a_store_generates_from_the_folders_it_was_opened_with(tmp_path):
    """stimkit.open(path, wordlist_dir=, template_dir=) then generate([...]): the store's own
    folders, as if the call had named them; a store opened without them does not know the lists."""
    example = REPO / "examples" / "care-tech"
    names, tsets = ["care_occupations", "women"], ["workplace"]
    with stimkit.open(tmp_path / "own.duckdb", wordlist_dir=example / "wordlists", template_dir=example / "templates") as s:
        opened_with = s.generate(names, tsets)
    with stimkit.open(tmp_path / "named.duckdb") as s:
        named_in_call = s.generate(names, tsets, example / "wordlists", example / "templates")
        with pytest.raises(stimkit.StimkitError, match="unknown word list 'care_occupations'"):
            s.generate(names, tsets)
    assert [(r["name"], r["version"], r["n_stimuli"]) for r in opened_with] == \
        [(r["name"], r["version"], r["n_stimuli"]) for r in named_in_call]
    assert {r["name"] for r in opened_with} == {"care_occupations@workplace", "women@workplace"}


@pytest.mark.parametrize("templates, context", [("word", "word"), ("may2019", "sentence")])
def test_weat_runs_the_engines_computation(catalog_store, templates, context):
    """One WEAT path: stimkit.weat on the vectors a stored result used gives that result's d, p,
    interval and s(w) (both call run.association.statistics), words and sentences (as units) alike."""
    import polars as pl

    s = catalog_store
    # Six words a side, one stimulus each (in sentences: one template's), so the engine's units
    # (words) are the function's (each vector its own) for the p and the interval alike.
    one = "" if templates == "word" else " AND template_id = 'may2019/count_noun:3'"
    first = "SELECT * FROM current_stimuli WHERE set_name = '{}'" + one + " ORDER BY ordinal LIMIT 6"
    report = s.test(x=first.format(f"flowers@{templates}"), y=first.format(f"insects@{templates}"),
                    a=f"pleasant@{templates}", b=f"unpleasant@{templates}", name="six-flowers", context=context,
                    units="sentences", encoders=["glove-6b-50d"], seed=2)
    (result,) = report.results
    assert result.p_method == "exact"            # C(12, 6) = 924 partitions: no stream, the same p
    items = result.items.filter(pl.col("dropped").is_null()) if "dropped" in result.items.columns else result.items
    vectors = dict(s.con.execute(
        "SELECT DISTINCT stimulus, vector FROM stimulus_vectors WHERE encoder = 'glove-6b-50d'").fetchall())
    X, Y, A, B = ([vectors[t] for t in items.filter(pl.col("role") == r)["stimulus"]] for r in "XYAB")
    res = stimkit.weat(X, Y, A, B)
    assert res.effect_size == pytest.approx(result.effect_size, abs=1e-12)
    assert res.pvalue == pytest.approx(result.p_value, abs=1e-15) and res.min_p == pytest.approx(result.min_p)
    assert res.ci == pytest.approx((result.ci_low, result.ci_high), abs=1e-12)
    got = items.filter(pl.col("role").is_in(["X", "Y"]))["association"].to_numpy()
    assert res.associations == pytest.approx(got, abs=1e-12)
