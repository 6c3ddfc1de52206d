import os

# torch on 2 shared cores slows tenfold with busy-waiting OpenMP threads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import json
from pathlib import Path

import pytest

from stimkit.stimuli import generate, wordlists
from stimkit import store
from stimkit.catalog.definitions import default_specs

REPO = Path(__file__).resolve().parent.parent
# The published stimulus files and reference tables the tests read: copies in the repository
# (tests/fixtures/<reference folder>/, each with its SOURCE.md), so a lone clone runs every test.
FIXTURES = REPO / "tests" / "fixtures"
REFERENCE = FIXTURES / "sent-bias" / "tests"
# The six published sets the authors cut at random to equalise targets (spec/STIMULI.md).
CUT_SETS = {("sent-weat2", "targ1"), ("sent-weat7", "targ2"), ("sent-weat7b", "targ2"),
            ("sent-weat8", "targ2"), ("sent-weat8b", "targ2"), ("sent-weat9", "targ2")}


def published(name: str) -> dict:
    return json.loads((REFERENCE / f"{name}.jsonl").read_text())


def snapshot(con) -> dict:
    """Every stored table's rows, to show a failed command left the store as it was."""
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()]
    return {t: store.rows(con, f"SELECT * FROM {t} ORDER BY ALL") for t in tables}


@pytest.fixture(scope="session")
def catalog_db(tmp_path_factory):
    """A store with the whole catalog generated (built once per session)."""
    path = tmp_path_factory.mktemp("store") / "catalog.duckdb"
    con = store.connect(path)
    lists = wordlists.load_all()
    generate.generate(con, default_specs(lists), lists)
    con.close()
    return path


@pytest.fixture
def catalog_con(catalog_db, tmp_path):
    """A private copy of the generated store: tests that write do not leak into others."""
    import shutil
    path = tmp_path / "catalog-copy.duckdb"
    shutil.copy(catalog_db, path)
    con = store.connect(path)
    yield con
    con.close()


@pytest.fixture
def empty_con(tmp_path):
    con = store.connect(tmp_path / "s.duckdb")
    yield con
    con.close()


@pytest.fixture
def catalog_store(catalog_db, tmp_path):
    """A library Store on a private copy of the generated catalog store."""
    import shutil

    import stimkit

    path = tmp_path / "catalog-store.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        yield s


# The files that take longest (seconds of one worker, measured with --durations=0), run first:
# `make test` gives each worker a file at a time, and a long file handed out last would leave
# the other workers idle while it runs.
SLOW_FILES = ("test_docs.py", "test_reliability.py", "test_inputs_follow.py", "test_library.py", "test_ray.py",
              "test_crows.py", "test_train.py", "test_likelihood_more.py", "test_hostile.py", "test_read_commands.py",
              "test_encode_speed.py", "test_likelihood.py", "test_scoring.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))  # stable: file order kept otherwise
