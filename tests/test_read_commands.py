"""Every read command, every format: one valid document of data on stdout, prose on stderr;
reads open the store read-only, never create one, and never write."""

import csv
import io
import json
import shutil

import pytest
from typer.testing import CliRunner

import stimkit
from stimkit.cli import app
from stimkit.views.emit import FORMATS

from conftest import snapshot

invoke = CliRunner().invoke


@pytest.fixture(scope="module")
def db(catalog_db, tmp_path_factory):
    path = tmp_path_factory.mktemp("reads") / "reads.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        s.test(["weat7", "weat8", "sent-weat7"], encoders=["glove-6b-50d"], budget=1000)
        s.audit(["sent-weat6"], ["glove-6b-50d"], budget=1000)
        s.wefat("wefat-names", "glove-6b-50d", budget=1000)
    return path


READS = {
    "results": (["results"], 3),  # the 3 tests (the audit's full test is kind audit: not in the default family)
    "check": (["check"], None),
    "query": (["query", "SELECT test, effect_size, [1.5, 2.0]::FLOAT[2] AS v, '[/] :x:' AS markup FROM latest_results"], 3),
    "sets": (["sets", "flowers"], 2),
    "catalog": (["catalog", "--paper", "may-2019"], 46),
    "encoders": (["encoders"], None),
    "audit show": (["audit", "show", "--templates"], 3),  # its top 3 templates alone; both tables: below
    "wefat-results": (["wefat-results"], 1),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("command", list(READS))
def test_each_read_command_prints_one_document_per_format(db, command, fmt):
    args, rows = READS[command]
    before = snapshot_of(db)
    r = invoke(app, ["--db", str(db), *args, "--format", fmt])
    assert r.exit_code == 0, r.output
    check_document(r.stdout_bytes if fmt == "parquet" else r.stdout, fmt, rows)
    if command == "query" and fmt in ("csv", "json"):
        assert "[/] :x:" in r.stdout and "[1.5,2.0]" in r.stdout.replace(" ", "")  # data is never markup; vectors are lists
    if command == "query" and fmt == "table":
        assert "[2 floats]" in r.stdout
    assert snapshot_of(db) == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_audit_show_prints_both_its_tables_in_every_format(db, fmt):
    """The audits (1) and the templates that move each most (--top 3), in every format: json one
    document, csv/tsv one table after another (each its header), ndjson/parquet a `table` column."""
    r = invoke(app, ["--db", str(db), "audit", "show", "--top", "3", "--format", fmt])
    assert r.exit_code == 0, r.output
    out = r.stdout
    if fmt == "json":
        doc = json.loads(out)
        assert len(doc["rows"]) == 1 and doc["rows"][0]["test"] == "sent-weat6" and "pooled_d" in doc["rows"][0]
        assert len(doc["templates"]) == 3 and {"frame", "d_alone"} <= set(doc["templates"][0])
    elif fmt in ("csv", "tsv"):
        audits, templates = out.split("\n\n")
        check_document(audits + "\n", fmt, 1)
        check_document(templates, fmt, 3)
        assert "pooled_d" in audits.splitlines()[0] and "d_alone" in templates.splitlines()[0]
        assert "Template audits" in r.stderr and "Templates that move each test most" in r.stderr
    elif fmt == "ndjson":
        tables = [json.loads(line)["table"] for line in out.splitlines()]
        assert tables == ["audits"] + ["templates"] * 3
    elif fmt == "parquet":
        import polars as pl

        assert pl.read_parquet(io.BytesIO(r.stdout_bytes))["table"].to_list() == ["audits"] + ["templates"] * 3
    elif fmt == "markdown":
        audits, templates = out.split("\n\n")
        check_document(audits, fmt, 1)
        check_document(templates, fmt, 3)
    elif fmt == "latex":
        assert out.count("\\begin{tabular}") == 2 and "pooled\\_d" in out and "d\\_alone" in out
    else:
        assert "Template audits" in out and "Templates that move each test most" in out and "d_alone" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_prints_its_summary_as_one_document_per_format(catalog_db, tmp_path, fmt):
    path = tmp_path / "encode.duckdb"
    shutil.copy(catalog_db, path)
    r = invoke(app, ["--db", str(path), "encode", "-e", "glove-6b-50d", "--set", "flowers@word", "--format", fmt])
    assert r.exit_code == 0, r.output
    check_document(r.stdout_bytes if fmt == "parquet" else r.stdout, fmt, 1)
    if fmt == "json":
        assert json.loads(r.stdout)[0]["encoded"] == 25


def check_document(out: str, fmt: str, rows: int | None) -> None:
    """stdout is data alone, in `fmt`, with `rows` rows (None: any number)."""
    if fmt == "json":
        doc = json.loads(out)  # the whole of stdout is one document
        data = doc["rows"] if isinstance(doc, dict) else doc
        assert rows is None or len(data) == rows
    elif fmt == "ndjson":
        lines = [json.loads(line) for line in out.splitlines()]
        assert rows is None or len(lines) == rows
    elif fmt in ("csv", "tsv"):
        parsed = list(csv.reader(io.StringIO(out), delimiter="," if fmt == "csv" else "\t"))
        assert parsed and all(len(row) == len(parsed[0]) for row in parsed)
        assert rows is None or len(parsed) == rows + 1
    elif fmt == "markdown":
        body = [line for line in out.splitlines() if line.startswith("|")]
        assert rows is None or len(body) == rows + 2
    elif fmt == "latex":  # a tabular, or a paper's booktabs table (results) with its caption
        assert out.startswith(("\\begin{tabular}", "% needs \\usepackage{booktabs}"))
        assert out.rstrip().endswith(("\\end{tabular}", "\\end{table}"))
    elif fmt == "parquet":
        import polars as pl

        assert rows is None or pl.read_parquet(io.BytesIO(out)).height == rows
    else:
        assert fmt == "table" and out.strip()


def snapshot_of(path):
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return snapshot(con)
    finally:
        con.close()


def test_a_read_on_a_missing_store_exits_2_and_creates_nothing(tmp_path):
    for args in (["results"], ["check"], ["query", "SELECT 1"], ["sets"], ["encoders"]):
        r = invoke(app, ["--db", str(tmp_path / "missing.duckdb"), *args])
        assert r.exit_code == 2 and "no store at" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "missing.duckdb").exists()


def test_a_failed_write_on_a_fresh_path_leaves_no_store(tmp_path):
    """A typo on a fresh --db must not leave an empty store that later reads would find."""
    path = tmp_path / "fresh.duckdb"
    for args in (["test", "nosuch"], ["wefat", "nosuch"], ["generate", "-w", "nosuch"], ["run", "--paper", "nosuch"]):
        r = invoke(app, ["--db", str(path), *args])
        assert r.exit_code in (1, 2) and len(r.stderr.strip().splitlines()) == 1, (args, r.output)
        assert not path.exists() and not (tmp_path / "fresh.duckdb.wal").exists(), args
        assert list(tmp_path.iterdir()) == [], args  # nor a staged one beside it
    assert invoke(app, ["--db", str(path), "generate", "-w", "flowers", "-t", "word"]).exit_code == 0
    r = invoke(app, ["--db", str(path), "test", "nosuch"])
    assert r.exit_code == 2 and path.exists()  # a store with data is never removed
    with stimkit.open(path, read_only=True) as s:
        assert s.sets("flowers").height == 1


@pytest.mark.parametrize("sql", ["DELETE FROM results", "DROP TABLE results", "SELECT 1; DELETE FROM results",
                                 "COPY results TO 'x.csv'", "ATTACH 'other.duckdb'"])
def test_query_cannot_write(db, sql):
    before = snapshot_of(db)
    r = invoke(app, ["--db", str(db), "query", sql])
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
    assert snapshot_of(db) == before


def test_query_cannot_read_host_files_unless_allowed(db, tmp_path):
    data = tmp_path / "x.csv"
    data.write_text("a\n1\n")
    r = invoke(app, ["--db", str(db), "query", f"SELECT * FROM read_csv('{data}')"])
    assert r.exit_code == 1 and "query failed" in r.stderr
    r = invoke(app, ["--db", str(db), "query", f"SELECT * FROM read_csv('{data}')", "--allow-files", "--format", "csv"])
    assert r.exit_code == 0 and r.stdout.splitlines() == ["a", "1"]


def test_query_reads_types_a_frame_cannot_hold_as_text(db):
    """duckdb_settings() has a VARIANT column, which polars cannot hold: read as text, not an internal error."""
    for fmt in ("csv", "json", "table"):
        r = invoke(app, ["--db", str(db), "query", "SELECT name, typed_value, 42::VARIANT AS \"a \"\"v\"\"\" "
                                                   "FROM duckdb_settings() WHERE name = 'threads'", "--format", fmt])
        assert r.exit_code == 0 and "internal error" not in r.stderr, r.output
    rows = json.loads(r.stdout if fmt == "json" else invoke(app, ["--db", str(db), "query", "SELECT 42::VARIANT AS "
                                                                  "\"a \"\"v\"\"\"", "--format", "json"]).stdout)
    assert rows == [{'a "v"': "42"}]


def test_query_takes_named_parameters_and_a_limit(db):
    r = invoke(app, ["--db", str(db), "query", "SELECT test FROM latest_results WHERE test = $t", "--param", "t=weat8",
                     "--format", "csv"])
    assert r.stdout.splitlines() == ["test", "weat8"]
    r = invoke(app, ["--db", str(db), "query", "SELECT * FROM range(250)", "--format", "table"])
    assert "150 more rows" in r.stderr


@pytest.mark.parametrize("args", [["results", "--where", "1=1; DROP TABLE results"],
                                  ["results", "--where", "1=1; DELETE FROM result_items"],
                                  ["check", "--where", "1=1; DROP TABLE runs"]])
def test_stacked_sql_in_where_is_refused(db, args):
    before = snapshot_of(db)
    r = invoke(app, ["--db", str(db), *args])
    assert r.exit_code == 2 and "--where" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert snapshot_of(db) == before


def test_version_and_a_fresh_stimkit_db(tmp_path, monkeypatch):
    r = invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip().startswith(f"stimkit {stimkit.__version__} (store schema ")
    monkeypatch.setenv("STIMKIT_DB", str(tmp_path / "new.duckdb"))
    r = invoke(app, ["generate", "-w", "flowers", "-t", "word"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "new.duckdb").exists()
