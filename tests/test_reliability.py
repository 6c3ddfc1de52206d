"""The reliability suite (issue 12): bad input and faults, as a new user meets them.

Each case asserts the exit code, one line on stderr naming the culprit, nothing on stdout,
and an identical store (every table's rows). More cases of the same suite live beside the
code they guard: tests/test_inputs.py (word lists, templates, names, paths, export, import,
SIGINT in generate), tests/test_read_commands.py (user SQL), tests/test_families.py
(selection), tests/test_encode_speed.py and tests/test_encoders.py (encoder specs).
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from stimkit import cli, stats

from conftest import snapshot

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
FLOWERS_14 = "SELECT * FROM current_stimuli WHERE set_name = 'flowers@word' AND ordinal < 14"
INSECTS_14 = "SELECT * FROM current_stimuli WHERE set_name = 'insects@word' AND ordinal < 14"
ADHOC = ["--y", "insects@word", "--a", "pleasant@word", "--b", "unpleasant@word"]


@pytest.fixture(scope="module")
def tested_db(catalog_db, tmp_path_factory):
    path = tmp_path_factory.mktemp("rel") / "tested.duckdb"
    shutil.copy(catalog_db, path)
    subprocess.run([sys.executable, "-m", "stimkit", "--db", str(path), "test", "weat6", "--budget", "1000", "-q"],
                   check=True, env=ENV, capture_output=True)
    return path


@pytest.fixture
def db(tested_db, tmp_path):
    path = tmp_path / "case.duckdb"
    shutil.copy(tested_db, path)
    return path


def rows_of(path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return snapshot(con)
    finally:
        con.close()


def run_main(capsys, *args):
    with pytest.raises(SystemExit) as exit_:
        cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


def zero_vectors(tmp_path) -> Path:
    """An `import:` file whose vectors are all zero."""
    words = ["rose", "tulip", "daisy", "lily", "ant", "bee", "fly", "moth", "joy", "love", "peace", "happy",
             "pain", "hurt", "evil", "ugly"]
    pl.DataFrame({"text": words, "vector": [[0.0, 0.0, 0.0]] * len(words)}).write_parquet(tmp_path / "zeros.parquet")
    return tmp_path / "zeros.parquet"


CASES = {
    "stacked SQL in --where": (["results", "--where", "1=1; DELETE FROM result_items"], 2, "--where"),
    "stacked SQL in a set query": (["test", "--x", "SELECT * FROM current_stimuli; DROP TABLE results; SELECT 1", *ADHOC],
                                   1, "must be a single SELECT"),  # one test of the run fails: exit 1
    "alpha out of range": (["results", "--alpha", "2"], 2, "--alpha must be between 0 and 1"),
    "alpha zero in test": (["test", "weat6", "--alpha", "0"], 2, "--alpha must be between 0 and 1"),
    "negative bootstrap": (["test", "weat6", "--bootstrap", "-5"], 2, "--bootstrap must be 0"),
    "seed beyond 64 bits": (["test", "weat6", "--seed", str(2 ** 64)], 2, "--seed must be between 0 and 2^63 - 1"),
    "exact beyond its limit": (["test", "--x", FLOWERS_14, "--y", INSECTS_14, "--a", "pleasant@word",
                                "--b", "unpleasant@word", "--method", "exact"], 1, "use --method sampled"),
    "n = 1 per side": (["test", "--x", "SELECT * FROM current_stimuli WHERE set_name = 'flowers@word' AND ordinal = 0",
                        "--y", "SELECT * FROM current_stimuli WHERE set_name = 'insects@word' AND ordinal = 0",
                        "--a", "pleasant@word", "--b", "unpleasant@word"], 1, "at least 2 per target set"),
    "X identical to Y": (["test", "--x", "flowers@word", "--y", "flowers@word", "--a", "pleasant@word",
                          "--b", "unpleasant@word"], 1, "X and Y hold the same items"),
    "markup in an argument": (["test", "[/]"], 2, "no test matches '[/]'"),
    "emoji code in a value": (["results", "--where", "test = ':x:'"], 1, "where test = ':x:'"),
    "unknown correction": (["results", "--correct", "bonferonni"], 2, "--correct 'bonferonni': unknown correction"),
    "unknown run": (["results", "--run", "nope"], 2, "--run nope: no such run"),
    "query that writes": (["query", "DELETE FROM results"], 2, "query can only read"),
    "unknown encoder": (["test", "weat6", "-e", "nosuch"], 1, "unknown encoder 'nosuch'"),
    "unknown layout": (["results", "--layout", "nope"], 2, "unknown layout 'nope'"),
    "a hub model offline": (["test", "weat6", "-e", "hf:someorg/nosuchmodel"], 1, "not found locally and no network"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_leaves_the_store(db, capsys, case):
    args, code, message = CASES[case]
    before = rows_of(db)
    exit_code, out, err = run_main(capsys, "--db", db, *args)
    lines = err.strip().splitlines()
    assert exit_code == code, err
    assert len(lines) == 1 and message in lines[0], err
    assert out == "" and "Traceback" not in err
    assert rows_of(db) == before


def test_all_zero_vectors_are_refused(db, capsys, tmp_path):
    source = zero_vectors(tmp_path)
    before_results = rows_of(db)["results"]
    code, out, err = run_main(capsys, "--db", db, "test", "--x", "SELECT 'rose' AS stimulus UNION ALL SELECT 'tulip'",
                              "--y", "SELECT 'ant' AS stimulus UNION ALL SELECT 'bee'",
                              "--a", "SELECT 'joy' AS stimulus UNION ALL SELECT 'love'",
                              "--b", "SELECT 'pain' AS stimulus UNION ALL SELECT 'hurt'", "-e", f"import:{source}")
    assert code == 1 and "zero vector" in err and len(err.strip().splitlines()) == 1, err
    assert rows_of(db)["results"] == before_results


def test_a_non_numeric_csv_import_names_the_row(db, capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text('text,vector\nrose,"1 2 3"\ntulip,"1 x 3"\n')
    code, out, err = run_main(capsys, "--db", db, "encode", "-e", f"import:{bad}", "--set", "flowers@word")
    assert code == 1 and "row 3 ('tulip')" in err and len(err.strip().splitlines()) == 1, err


def test_a_corrupted_store_is_one_line(tmp_path, capsys):
    path = tmp_path / "corrupt.duckdb"
    path.write_bytes(b"this is not a duckdb file" * 100)
    code, out, err = run_main(capsys, "--db", path, "sets")
    assert code == 3 and str(path) in err and len(err.strip().splitlines()) == 1, err


def test_a_store_from_a_newer_stimkit_is_refused(db, capsys):
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_migrations (version, name) VALUES (999, '999_future.sql')")
    con.close()
    before = rows_of(db)
    for args in (["sets"], ["generate", "-w", "flowers", "-t", "word"]):
        code, out, err = run_main(capsys, "--db", db, *args)
        assert code == 3 and "made by a newer stimkit" in err and "upgrade" in err, err
    assert rows_of(db) == before


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(db, capsys, monkeypatch):
    from stimkit.analysis import families as analysis

    def broken(*a, **k):
        raise RuntimeError("planted bug")

    monkeypatch.setattr(analysis, "corrected_relation", broken)
    code, out, err = run_main(capsys, "--db", db, "results")
    assert code == 1 and "internal error: RuntimeError: planted bug" in err and "Traceback" not in err
    with pytest.raises(RuntimeError, match="planted bug"):
        cli.main(["--db", str(db), "--debug", "results"])


def test_exact_enumeration_is_bounded_in_memory():
    """14+14 would be 40 million partitions: refused before any allocation; under the
    limit, the chunked enumeration equals the one-shot one."""
    with pytest.raises(stats.InvalidInput, match="over the limit"):
        stats.permutation_p(np.arange(28.0), 14, method="exact")
    values = np.random.default_rng(1).normal(size=18)
    chunked = np.concatenate(list(stats.subset_sum_chunks(values, 9, chunk=1000)))
    assert np.allclose(np.sort(chunked), np.sort(stats.exact_subset_sums(values, 9)))


# ------------------------------------------------------------------ faults: signals mid-run

def start(db, *args):
    return subprocess.Popen([sys.executable, "-m", "stimkit", "--db", str(db), *args], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_line(proc, starts: str) -> str:
    """Read the command's stderr until a line starting with `starts`: evidence that it is mid-run
    (a progress line comes before its run's one commit), whatever the machine's speed. Fails
    if the command ends first, so a kill test never passes without having killed mid-run."""
    for line in proc.stderr:
        if line.startswith(starts):
            return line
    pytest.fail(f"the command ended (exit {proc.wait()}) before a line starting {starts!r}")


def wait_for_staged(folder: Path, proc) -> list[str]:
    """Poll `folder` until the command has created its staged store (`.NAME.PID.new`): the store
    it is building. Fails if the command ends first."""
    while proc.poll() is None:
        names = [p.name for p in folder.iterdir()]
        if any(n.startswith(".") and n.endswith(f".{proc.pid}.new") for n in names):
            return names
        time.sleep(0.01)
    pytest.fail(f"the command ended (exit {proc.returncode}) before it staged a store in {folder}")


def rerun(args: list[str], path: Path, sql: str) -> list[tuple]:
    """Run the command on the store to its end (a killed one resumes), then read `sql` from it."""
    subprocess.run([sys.executable, "-m", "stimkit", "--db", str(path), *args], env=ENV, check=True, capture_output=True)
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# Every test on GloVe, and every sent- Caliskan test's template audit: long enough that a kill at
# the first result lands mid-run on any machine, with budgets that keep the reruns short (the
# audit's per-template tests are exact up to C(2n, n) = 200,000: cheaper than sampling 20,000).
KILLED_RUN = ["test", "--all", "-e", "glove-6b-50d", "--budget", "6000", "--seed", "5"]
RUN_SQL = "SELECT test, effect_size, p_value, n_x FROM latest_results ORDER BY test"
KILLED_AUDIT = ["audit", "templates", "-e", "glove-6b-50d", "--budget", "200000"]
AUDIT_SQL = "SELECT test, pooled_d, tau2, decision_flip_share FROM audits ORDER BY test"


@pytest.fixture(scope="module")
def clean_runs(catalog_db, tmp_path_factory):
    """What the killed commands give run cleanly to their end, once for every signal's test."""
    folder = tmp_path_factory.mktemp("clean")
    shutil.copy(catalog_db, folder / "run.duckdb")
    shutil.copy(catalog_db, folder / "audit.duckdb")
    return {"run": rerun(KILLED_RUN, folder / "run.duckdb", RUN_SQL),
            "audit": rerun(KILLED_AUDIT, folder / "audit.duckdb", AUDIT_SQL)}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_killed_run_leaves_no_partial_run_and_a_rerun_equals_a_clean_one(catalog_db, tmp_path, sig, clean_runs):
    killed = tmp_path / "killed.duckdb"
    shutil.copy(catalog_db, killed)
    args = KILLED_RUN
    proc = start(killed, *args)
    wait_for_line(proc, "[1/")  # the first of 88 results computed, none committed: mid-run
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (130 if sig == signal.SIGINT else -9), err
    if sig == signal.SIGINT:
        assert "Traceback" not in err and len([l for l in err.splitlines() if l.startswith("error")]) <= 1
    con = duckdb.connect(str(killed))
    stored = con.execute("SELECT count(*) FROM results").fetchall()[0][0]
    con.close()
    assert stored == 0  # all or nothing: killed before its one commit
    assert rerun(args, killed, RUN_SQL) == clean_runs["run"] and len(clean_runs["run"]) == 88


def test_a_killed_audit_leaves_no_audit_and_a_rerun_equals_a_clean_one(catalog_db, tmp_path, clean_runs):
    killed = tmp_path / "killed.duckdb"
    shutil.copy(catalog_db, killed)
    args = KILLED_AUDIT
    proc = start(killed, *args)
    wait_for_line(proc, "sent-weat1 ")  # the first test's audit computed, none committed: mid-run
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -9
    con = duckdb.connect(str(killed))
    assert con.execute("SELECT count(*) FROM audits").fetchall()[0][0] == 0
    assert con.execute("SELECT count(*) FROM results").fetchall()[0][0] == 0
    con.close()
    assert rerun(args, killed, AUDIT_SQL) == clean_runs["audit"] and len(clean_runs["audit"]) >= 10


def files_left(folder: Path, timeout: float = 10.0) -> list[str]:
    """The files in `folder` once the killed command's guard has had time to clean up."""
    deadline = time.monotonic() + timeout
    while True:
        left = sorted(p.name for p in folder.iterdir())
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_command_killed_on_a_new_path_leaves_no_file(tmp_path, sig):
    """The new store is built under a hidden name beside its path and moved there only when
    the command ends: killed (SIGKILL: its guard process removes the file) or interrupted,
    it leaves nothing in the folder; a read command then finds no store."""
    folder = tmp_path / "study"
    folder.mkdir()
    path = folder / "new.duckdb"
    proc = start(path, "test", "--all", "-e", "glove-6b-50d", "--budget", "200000")
    wait_for_line(proc, "[1/")  # sets generated and encoded into the staged store, the tests running
    staged = [p.name for p in folder.iterdir()]
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (130 if sig == signal.SIGINT else -9), err
    assert staged and all(name.startswith(".new.duckdb.") for name in staged)  # never at the path itself
    assert files_left(folder) == []
    r = subprocess.run([sys.executable, "-m", "stimkit", "--db", str(path), "sets"], env=ENV, capture_output=True, text=True)
    assert r.returncode == 2 and "no store at" in r.stderr and files_left(folder) == []


def test_a_staged_store_whose_command_died_is_removed_by_the_next_command(tmp_path):
    """Were the guard killed too (a machine that went down), the next command on the path
    removes the staged file of a process that no longer runs, and leaves a live one's."""
    path = tmp_path / "s.duckdb"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".s.duckdb.{int(dead.stdout)}.new"
    live = tmp_path / f".s.duckdb.{os.getpid()}.new"  # this test's process: alive
    for f in (stale, Path(f"{stale}.wal"), live):
        f.write_bytes(b"partial")
    r = subprocess.run([sys.executable, "-m", "stimkit", "--db", str(path), "generate", "-q", "-w", "flowers", "-t", "word"],
                       env=ENV, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, live.name])


def test_a_store_created_meanwhile_by_another_command_is_not_replaced(tmp_path):
    from stimkit.errors import StoreError
    from stimkit.store.staging import Staging

    path = tmp_path / "s.duckdb"
    staging = Staging.start(path)
    con = duckdb.connect(str(staging.staged))
    con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    con.close()
    path.write_bytes(b"another command's store")  # created while this one ran
    with pytest.raises(StoreError, match="another command created this store while this one ran; "
                                         "this command's store is kept at .*s\\.\\d+\\.duckdb"):
        staging.finish(keep=True)
    assert path.read_bytes() == b"another command's store"
    aside, = [p for p in tmp_path.iterdir() if p != path]
    assert duckdb.connect(str(aside), read_only=True).execute("SELECT x FROM mine").fetchall() == [(1,)]
    assert staging.guard is None and not staging.staged.exists()


def test_a_killed_generate_leaves_no_store_and_a_rerun_completes(tmp_path):
    path = tmp_path / "gen.duckdb"
    proc = start(path, "generate", "-q")
    staged = wait_for_staged(tmp_path, proc)  # the store is being built: it renders ~200 sets, then writes
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -9 and staged and all(n.startswith(f".gen.duckdb.{proc.pid}.new") or n == ".gen.duckdb.lock"
                                                    for n in staged)  # the store, and its creation lock (store.staging)
    assert files_left(tmp_path) == []
    r = subprocess.run([sys.executable, "-m", "stimkit", "--db", str(path), "generate", "-q"], env=ENV,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    clean = tmp_path / "clean.duckdb"
    subprocess.run([sys.executable, "-m", "stimkit", "--db", str(clean), "generate", "-q"], env=ENV, check=True,
                   capture_output=True)
    sets = []
    for p in (path, clean):
        con = duckdb.connect(str(p), read_only=True)
        sets.append(con.execute("SELECT name, version, n_stimuli FROM current_sets ORDER BY name").fetchall())
        con.close()
    assert sets[0] == sets[1] and len(sets[0]) > 100
