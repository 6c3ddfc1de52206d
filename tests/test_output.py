"""The output layer: every format parses back, escapes what it must, and keeps names whole."""

import csv
import io
import json
import math
import re
from typing import Annotated

import duckdb
import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from stimkit import store, StimkitError
from stimkit.cli import app
from stimkit.cli.common import format_option, handles_errors
from stimkit.views import emit as output

TRICKY = 'a [bold]x[/] :x: | b, "q"\nline2'
TEX = "50% & $x_1$ {y} ~ ^ \\"
LONG = "hf:sentence-transformers/all-MiniLM-L6-v2-with-a-long-tail"


@pytest.fixture(scope="module")
def frame():
    """Ints (with NULL), floats (NaN, inf), strings with markup, pipes, commas, quotes, a newline
    and LaTeX specials, a date and a FLOAT[3] vector, as DuckDB hands them to polars."""
    return duckdb.sql(f"""
        SELECT * FROM (VALUES
          (1,    0.123456789::DOUBLE, $${TRICKY}$$, DATE '2024-01-02', [0.1, 0.2, 0.3]::FLOAT[3]),
          (2,    'nan'::DOUBLE,       NULL,         NULL,              NULL),
          (NULL, 'inf'::DOUBLE,       $${TEX}$$,    DATE '2024-03-04', [1.5::FLOAT, 'nan'::FLOAT, 2.5::FLOAT]::FLOAT[3])
        ) t(i, f, s, d, v)""").pl()


def emitted(df, fmt, **kwargs):
    data, notes = io.StringIO(), io.StringIO()
    output.emit(df, fmt, stream=data, notes=notes, **kwargs)
    return data.getvalue(), notes.getvalue()


def test_frame_has_the_types_a_store_returns(frame):
    assert frame.schema["v"] == pl.Array(pl.Float32, 3) and frame.schema["d"] == pl.Date


def test_json_is_one_document_nan_null_dates_iso_vectors_lists(frame):
    text, notes = emitted(frame, "json")
    rows = json.loads(text)  # the whole of stdout
    assert [r["i"] for r in rows] == [1, 2, None]
    assert [r["f"] for r in rows] == [0.123456789, None, None]  # full precision; NaN and inf are null
    assert rows[0]["s"] == TRICKY and rows[2]["s"] == TEX and rows[1]["s"] is None
    assert [r["d"] for r in rows] == ["2024-01-02", None, "2024-03-04"]
    assert rows[0]["v"] == [0.1, 0.2, 0.3]  # float32 written at its own shortest precision
    assert rows[2]["v"] == [1.5, None, 2.5] and rows[1]["v"] is None
    assert notes == ""


def test_ndjson_is_one_object_per_row(frame):
    text, _ = emitted(frame, "ndjson")
    lines = text.splitlines()
    assert len(lines) == 3
    assert [json.loads(line) for line in lines] == json.loads(emitted(frame, "json")[0])


@pytest.mark.parametrize("fmt, sep", [("csv", ","), ("tsv", "\t")])
def test_csv_and_tsv_parse_back(frame, fmt, sep):
    text, _ = emitted(frame, fmt)
    header, *rows = list(csv.reader(io.StringIO(text), delimiter=sep))
    assert header == ["i", "f", "s", "d", "v"] and len(rows) == 3
    assert rows[0] == ["1", "0.123456789", TRICKY, "2024-01-02", "[0.1,0.2,0.3]"]
    assert rows[1] == ["2", "NaN", "", "", ""]  # NULL is an empty cell
    assert rows[2][:2] == ["", "inf"] and rows[2][2] == TEX and json.loads(rows[2][4]) == [1.5, None, 2.5]
    back = pl.read_csv(io.StringIO(text), separator=sep)
    assert back.height == 3 and math.isnan(back["f"][1]) and back["f"][2] == math.inf


def test_query_of_a_vector_column_prints_csv(tmp_path):
    """The crash in issue 11: `query "SELECT vector ..." --format csv`."""
    store.connect(tmp_path / "s.duckdb").close()  # query reads: it never creates a store
    r = CliRunner().invoke(app, ["--db", str(tmp_path / "s.duckdb"), "query",
                                 "SELECT [0.25, -1.5, 3.0]::FLOAT[3] AS vector, '[/] :x:' AS name", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert list(csv.reader(io.StringIO(r.stdout))) == [["vector", "name"], ["[0.25,-1.5,3.0]", "[/] :x:"]]


def cells(line: str, sep: str) -> list[str]:
    """Split a markdown/latex row on its unescaped separators."""
    return [c.strip() for c in re.split(rf"(?<!\\){re.escape(sep)}", line)]


def test_markdown_rows_and_escaping(frame):
    text, _ = emitted(frame, "markdown")
    lines = text.splitlines()
    assert len(lines) == 2 + 3  # header, rule, one line per row: the newline in a cell is <br>
    assert cells(lines[0], "|")[1:-1] == ["i", "f", "s", "d", "v"]
    assert lines[1] == "|---:|---:|---|---|---|"  # numbers right-aligned
    first = cells(lines[2], "|")[1:-1]
    assert first == ["1", "0.1235", 'a [bold]x[/] :x: \\| b, "q"<br>line2', "2024-01-02", "[3 floats]"]
    assert cells(lines[3], "|")[1:-1] == ["2", "NaN", "", "", ""]
    assert cells(lines[4], "|")[3] == "50% & $x_1$ {y} ~ ^ \\\\"


def test_latex_rows_and_escaping(frame):
    text, _ = emitted(frame, "latex")
    lines = text.splitlines()
    assert lines[0] == r"\begin{tabular}{rrlll}" and lines[-1] == r"\end{tabular}"
    body = lines[lines.index(r"\midrule") + 1:lines.index(r"\bottomrule")]
    assert len(body) == 3 and all(len(cells(b, "&")) == 5 for b in body)
    assert cells(body[0].removesuffix(r" \\"), "&") == ["1", "0.1235", 'a [bold]x[/] :x: | b, "q" line2', "2024-01-02", "[3 floats]"]
    assert cells(body[2], "&")[2] == r"50\% \& \$x\_1\$ \{y\} \textasciitilde{} \textasciicircum{} \textbackslash{}"


def test_latex_escape_is_one_pass():
    assert output.latex_escape("a_b\\{c}") == r"a\_b\textbackslash{}\{c\}"


def test_table_shows_vectors_floats_and_literal_markup(frame):
    text, notes = emitted(frame, "table", width=80, title="T [b]x[/b] :smile:")
    assert "[3 floats]" in text and "0.1235" in text and "0.123456789" not in text
    assert "a [bold]x[/] :x: | b" in text and "❌" not in text  # no markup, no emoji
    assert "T [b]x[/b] :smile:" in text and "😄" not in text
    assert all(len(line) <= 80 for line in text.splitlines()) and notes == ""


def names_frame(n: int = 4):
    return pl.DataFrame({
        "test": [f"sent-angry-black-woman-stereotype-b-{i}" for i in range(n)],
        "encoder": [f"{LONG}-{i}" for i in range(n)],
        "d": [0.5 + i for i in range(n)],
        "constant": ["same"] * n,
        "vector": [[float(i)] * 384 for i in range(n)],
        "p_value": [10.0 ** -i for i in range(n)],
    })


def test_table_keeps_names_whole_and_drops_least_useful_columns_first():
    df = names_frame()
    # test 37 + encoder 60 + d 3 + p_value 7 characters, and 3 per column + 1 of borders and padding: 120.
    text, notes = emitted(df, "table", width=120)
    for name in df["test"].to_list() + df["encoder"].to_list():
        assert name in text  # whole, on one line
    assert all(len(line) <= 120 for line in text.splitlines()) and max(map(len, text.splitlines())) == 120
    assert notes == ("2 columns not shown to fit 120 characters (a wider terminal or another --format shows them): "
                     "constant, vector\n")  # first what says little: one value throughout, then vectors
    assert " p_value " in text.splitlines()[1] and "0.001" in text
    text, notes = emitted(df, "table", width=119)  # then the names fold: no finding goes for a name
    assert notes.endswith(": constant, vector\n") and "0.001" in text and "3.5" in text
    assert all(len(line) <= 119 for line in text.splitlines())
    assert column_text(text, 2) == "".join(df["encoder"])  # folded over lines: whole when joined


def column_text(table: str, i: int) -> str:
    """Column i (1-based) of an ASCII table's body, its lines joined: a folded name whole again."""
    lines = table.splitlines()
    body = lines[next(k for k, line in enumerate(lines) if k and line.startswith("|-")) + 1:-1]
    return "".join(line.split("|")[i].strip() for line in body)


def test_table_at_80_columns_folds_the_long_names_and_keeps_the_numbers():
    df = pl.DataFrame({"test": ["weat7", "angry-black-woman-stereotype"],
                       "encoder": ["glove-6b-50d", "hf:sentence-transformers/all-MiniLM-L6-v2"], "d": [0.5, -1.25]})
    text, notes = emitted(df, "table", width=80)  # 28 + 41 + 5 + 10 = 84: the longest name folds
    assert notes == "" and "-1.25" in text and all(len(line) <= 80 for line in text.splitlines())
    assert column_text(text, 1) == "".join(df["test"]) and column_text(text, 2) == "".join(df["encoder"])
    assert "hf:sentence-transformers/all-MiniLM-" in text  # folded after a `-`, not inside a word
    text, notes = emitted(df, "table", width=84)
    assert notes == "" and "-1.25" in text and max(map(len, text.splitlines())) == 84
    assert "hf:sentence-transformers/all-MiniLM-L6-v2" in text  # room enough: whole, on one line


def test_a_narrow_table_drops_findings_only_from_the_right_once_names_fold():
    """At 40 characters: the names fold to NAME_WIDTH (set names before their @), headers of
    numbers at their `_`, and the rightmost finding goes, never a number cut; a `keep` column
    stays whatever its place; the interval's upper end goes under its lower end."""
    df = pl.DataFrame({"test": ["european_american_names@may2019"], "n_templates": [13], "pooled_d": [1.676],
                       "ci_low": [1.36], "ci_high": [1.992], "i2": [0.25], "sign_flip": [True]})
    text, notes = emitted(df, "table", width=50)
    assert all(len(line) <= 50 for line in text.splitlines())
    assert notes.endswith("them): i2, sign_flip\n")
    assert column_text(text, 1) == "european_american_names@may2019" and "| @may2019 " in text
    assert " 1.676 " in text and " 1.36 " in text and " 1.992 " in text and " 13 " in text
    text, notes = emitted(df, "table", width=50, keep=("sign_flip",))
    assert " true " in text and "sign_flip" not in notes and " 1.676 " in text


def test_table_stacks_a_column_under_its_partner_rather_than_drop_it():
    df = pl.DataFrame({"test": ["weat7", "sent-weat6"], "encoder": ["glove-6b-50d", "minilm,pooling=mean"],
                       "d": [1.495, -0.031], "ci": ["[0.89, 1.71]", "[-0.52, 0.47]"], "p_value": [0.0005, 0.5]})
    wide = 10 + 19 + 6 + 13 + 7 + 3 * 5 + 1  # every column side by side: 71 characters
    text, notes = emitted(df, "table", width=wide, drop_first=("ci",), stack={"ci": "d"})
    assert notes == "" and max(map(len, text.splitlines())) == wide and " ci " in text.splitlines()[1]
    text, notes = emitted(df, "table", width=wide - 1, drop_first=("ci",), stack={"ci": "d"})  # under d, not away
    lines = text.splitlines()
    assert notes == "" and all(len(line) <= wide - 1 for line in lines)
    assert lines[1].split("|")[3].strip() == "d" and lines[2].split("|")[3].strip() == "ci"
    first = next(i for i, line in enumerate(lines) if "weat7" in line)
    assert lines[first].split("|")[3].strip() == "1.495" and lines[first + 1].split("|")[3].strip() == "[0.89, 1.71]"
    text, notes = emitted(df, "table", width=wide - 1, drop_first=("ci",))  # without stack: dropped, and said so
    assert notes.endswith(": ci\n") and "[0.89" not in text


def test_table_off_a_terminal_shows_every_column():
    df = names_frame()
    text, notes = emitted(df, "table")  # a file: as wide as the content
    assert notes == "" and "[384 floats]" in text and "same" in text


def test_table_wraps_text_at_words_rather_than_dropping():
    sentence = " ".join(f"word{i:02d}" for i in range(40))  # 279 characters
    df = pl.DataFrame({"name": ["sent-weat3b"], "stimulus": [sentence], "n": [7]})
    text, notes = emitted(df, "table", width=80)
    assert notes == "" and "sent-weat3b" in text
    assert all(f"word{i:02d}" in text for i in range(40))  # every word whole
    assert all(len(line) <= 80 for line in text.splitlines()) and len(text.splitlines()) > 6


def test_limit_prints_the_first_rows_and_counts_the_rest(frame):
    text, notes = emitted(frame, "csv", limit=2)
    assert len(list(csv.reader(io.StringIO(text)))) == 1 + 2 and notes == "1 more row\n"
    text, notes = emitted(frame, "table", limit=1, more=10)
    assert "0.1235" in text and "NaN" not in text and notes == "12 more rows\n"


def test_columns_chooses_and_orders():
    text, _ = emitted(names_frame(2), "csv", columns=["d", "test", "absent"])
    assert text.splitlines()[0] == "d,test" and len(text.splitlines()) == 3


def test_document_is_one_json_object_and_meta_goes_to_stderr_otherwise(frame):
    data, notes = io.StringIO(), io.StringIO()
    output.emit_document({"family": "run_id = 'r1'", "m": 3, "tau2": float("nan")}, frame, "json", stream=data, notes=notes)
    doc = json.loads(data.getvalue())
    assert doc["family"] == "run_id = 'r1'" and doc["m"] == 3 and doc["tau2"] is None
    assert doc["rows"] == json.loads(emitted(frame, "json")[0]) and notes.getvalue() == ""
    data, notes = io.StringIO(), io.StringIO()
    output.emit_document({}, frame, "json", limit=1, stream=data, notes=notes, title="family r1")
    assert json.loads(data.getvalue()) == {"rows": doc["rows"][:1]} and notes.getvalue() == "family r1\n2 more rows\n"
    data, notes = io.StringIO(), io.StringIO()
    output.emit_document({"m": 3}, frame, "csv", stream=data, notes=notes)
    assert len(list(csv.reader(io.StringIO(data.getvalue())))) == 1 + 3 and notes.getvalue() == "m: 3\n"


def test_empty_frame():
    df = pl.DataFrame({"a": pl.Series([], dtype=pl.Int64), "b": pl.Series([], dtype=pl.String)})
    assert json.loads(emitted(df, "json")[0]) == []
    assert emitted(df, "csv")[0] == "a,b\n" and emitted(df, "ndjson")[0] == ""
    assert len(emitted(df, "markdown")[0].splitlines()) == 2 and "a" in emitted(df, "table", width=80)[0]


def test_print_rows_mixed_values():
    data = io.StringIO()
    rows = [{"test": "weat7", "d": "+1.234*", "significant": True, "p": 0.000123456, "v": [0.5, 0.25]},
            {"test": "[red]x[/]", "d": None, "significant": False, "p": 2, "v": None}]
    output.print_rows(rows, ["test", "d", "significant", "p", "v"], title="d by test", stream=data, width=80)
    text = data.getvalue()
    assert "d by test" in text and "[red]x[/]" in text and "+1.234*" in text
    assert "0.0001235" in text and "true" in text and "false" in text and "[2 floats]" in text


def test_check_format_names_the_known_formats(monkeypatch):
    assert output.check_format("JSON") == "json" and output.check_format("sentbias", ("sentbias",)) == "sentbias"
    with pytest.raises(StimkitError, match=r"^unknown format 'xml' \(known: table, csv, tsv, json, ndjson, parquet, markdown, latex\)$"):
        output.check_format("xml")
    with pytest.raises(StimkitError, match="unknown format"):
        output.emit(pl.DataFrame({"a": [1]}), "xml")
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert output.check_format(None) == "csv"
    monkeypatch.setattr("sys.stdout", type("Tty", (io.StringIO,), {"isatty": lambda self: True})())
    assert output.check_format(None) == "table"


def test_format_option_is_validated_by_the_command_line(monkeypatch):
    demo = typer.Typer()

    @demo.command()
    def show(fmt: Annotated[str | None, format_option("sentbias")] = None):
        output.emit(pl.DataFrame({"a": [1, 2]}), None if fmt == "sentbias" else fmt)

    runner = CliRunner()
    r = runner.invoke(demo, ["-f", "xml"])
    message = re.sub(r"[\s│]+", " ", r.output)  # typer draws a box around usage errors
    assert r.exit_code == 2 and "known: table, csv, tsv, json, ndjson, parquet, markdown, latex, sentbias" in message
    assert json.loads(runner.invoke(demo, ["--format", "json"]).stdout) == [{"a": 1}, {"a": 2}]
    monkeypatch.setenv("STIMKIT_FORMAT", "ndjson")
    assert runner.invoke(demo, []).stdout == '{"a":1}\n{"a":2}\n'


def test_error_messages_with_markup_print_literally():
    demo = typer.Typer()

    @demo.command()
    @handles_errors
    def fail():
        raise StimkitError("bad item '[/]' in [bold]x.txt:3 :x:")

    r = CliRunner().invoke(demo, [])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr == "error: bad item '[/]' in [bold]x.txt:3 :x:\n"


def test_other_store_types_in_machine_formats():
    df = duckdb.sql("""SELECT 1.50::DECIMAL(10, 2) AS dec, TIMESTAMP '2024-01-02 03:04:05.5' AS ts,
                              'ab'::BLOB AS b, {'k': 1, 'w': ['x']} AS st, [1, 2] AS ints""").pl()
    (row,) = json.loads(emitted(df, "json")[0])
    assert row == {"dec": 1.5, "ts": "2024-01-02T03:04:05.500000", "b": "YWI=", "st": {"k": 1, "w": ["x"]}, "ints": [1, 2]}
    (header, values) = list(csv.reader(io.StringIO(emitted(df, "csv")[0])))
    assert dict(zip(header, values)) == {"dec": "1.5", "ts": "2024-01-02T03:04:05.500000", "b": "YWI=",
                                         "st": '{"k":1,"w":["x"]}', "ints": "[1,2]"}
    text, _ = emitted(df, "markdown")
    assert cells(text.splitlines()[2], "|")[1:-1] == ["1.50", "2024-01-02T03:04:05.500000", "[2 bytes]", '{"k": 1, "w": ["x"]}', "[1, 2]"]


def test_several_tables_of_a_command_are_all_in_every_format():
    """emit_tables: the main table and the others, in every format; json one document."""
    audits = pl.DataFrame({"test": ["weat7", "weat8"], "pooled_d": [1.5, float("nan")]})
    templates = pl.DataFrame({"test": ["weat7"], "frame": ["This is X."], "flip": [True]})
    tables = {"audits": audits, "templates": templates}

    def tables_in(fmt, **kwargs):
        data, notes = io.StringIO(), io.StringIO()
        output.emit_tables(tables, fmt, stream=data, notes=notes, titles={"templates": "top templates"}, **kwargs)
        return data.getvalue(), notes.getvalue()

    doc = json.loads(tables_in("json", meta={"m": 2})[0])
    assert doc == {"m": 2, "rows": [{"test": "weat7", "pooled_d": 1.5}, {"test": "weat8", "pooled_d": None}],
                   "templates": [{"test": "weat7", "frame": "This is X.", "flip": True}]}
    for fmt, sep in (("csv", ","), ("tsv", "\t")):
        text, notes = tables_in(fmt, meta={"m": 2})
        first, second = text.split("\n\n")
        assert list(csv.reader(io.StringIO(first), delimiter=sep)) == [["test", "pooled_d"], ["weat7", "1.5"], ["weat8", "NaN"]]
        assert list(csv.reader(io.StringIO(second), delimiter=sep)) == [["test", "frame", "flip"], ["weat7", "This is X.", "true"]]
        assert notes == "audits\ntop templates\n"  # the titles, each before its table; meta is json's alone
    rows = [json.loads(line) for line in tables_in("ndjson")[0].splitlines()]
    assert [r["table"] for r in rows] == ["audits", "audits", "templates"] and rows[2]["frame"] == "This is X."
    assert "frame" not in rows[0]  # each row carries its own table's columns only
    buf = io.BytesIO()
    output.emit_tables(tables, "parquet", stream=buf)
    stacked = pl.read_parquet(io.BytesIO(buf.getvalue()))
    assert stacked["table"].to_list() == ["audits", "audits", "templates"] and stacked["frame"].to_list()[2] == "This is X."
    text, _ = tables_in("markdown")
    assert text.count("| test |") == 2 and "This is X." in text
    assert tables_in("latex")[0].count(r"\begin{tabular}") == 2
    text, _ = tables_in("table")
    assert "top templates" in text and "This is X." in text and "1.5" in text
    with pytest.raises(ValueError, match="'rows'"):
        output.emit_tables({"a": audits, "rows": templates}, "json", stream=io.StringIO())
