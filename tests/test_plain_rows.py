"""`stimkit results` prints its table, csv and tsv from plain rows (stimkit.plain.Rows), without
building a polars frame (issue 41: a third of a small store's reading was importing polars).
These tests hold the two paths together: the same query, the same rows in the same order, and
the same text, byte for byte, with polars' own writers as the oracle."""

import datetime as dt
import io
import json
import math
import shutil
import struct

import duckdb
import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import stimkit
from stimkit import store
from stimkit.analysis import families
from stimkit.plain import PLAIN_TYPES, Rows
from stimkit.views import emit, results as results_view


# ------------------------------------------------------------------ the writer against polars'

def polars_csv_floats(values: list[float]) -> list[str]:
    return pl.DataFrame({"x": values}, schema={"x": pl.Float64}).write_csv(include_header=False).splitlines()


def test_floats_are_written_as_polars_writes_them():
    """polars_float against polars' csv writer: 40,000 random bit patterns (every exponent,
    subnormals, NaN payloads), the powers of ten around both notation switches, and the signs
    of zero and infinity."""
    rng = np.random.default_rng(41)
    values = [struct.unpack("d", struct.pack("Q", int(b)))[0]
              for b in rng.integers(0, 2**64 - 1, size=40_000, dtype=np.uint64)]
    values += [float(f"{m}e{e}") for e in range(-325, 309) for m in (1, 1.5, 9.999999999999999, 2.0922328899014317)]
    values += [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-5, 9.99999e-6, 1e16, 9999999999999998.0, 5e-324,
               0.1 + 0.2, 100.0, 123456789012.5]
    assert [emit.polars_float(v) for v in values] == polars_csv_floats(values)
    # the two notations the writer switches between (Python's repr says 1e-05 and 1.5e-07)
    assert [emit.polars_float(v) for v in (1e-05, 1.5e-07, 1e16, 1e15)] == \
        ["0.00001", "1.5e-7", "1e+16", "1000000000000000.0"]


TEXT = st.text(st.sampled_from(list("ab ,;\t\n\r\"'\\é€#|*_") + ["\x01", "\x7f", "😀"]), max_size=8)
COLUMNS = {  # DuckDB type: values its column may hold (None: null)
    "DOUBLE": st.floats(allow_nan=True, allow_infinity=True),
    **{name: st.integers(-2**(bits - 1), 2**(bits - 1) - 1)
       for name, bits in (("TINYINT", 8), ("SMALLINT", 16), ("INTEGER", 32), ("BIGINT", 64))},
    **{name: st.integers(0, 2**bits - 1)
       for name, bits in (("UTINYINT", 8), ("USMALLINT", 16), ("UINTEGER", 32), ("UBIGINT", 64))},
    "BOOLEAN": st.booleans(),
    "VARCHAR": TEXT,
    "JSON": st.dictionaries(TEXT, st.one_of(st.integers(-9, 9), TEXT, st.booleans()), max_size=3).map(json.dumps),
    "TIMESTAMP": st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)),
    "VARCHAR[]": st.lists(st.one_of(st.none(), TEXT), max_size=3),
}


def relation(types: list[str], rows: list[tuple]):
    con = duckdb.connect()
    con.execute("CREATE TABLE t (" + ", ".join(f'"c{i} {t}" {t}' for i, t in enumerate(types)) + ")")
    if rows:
        con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(types))})", rows)
    return con, con.sql("SELECT * FROM t")


def table_text(df, width: int) -> str:
    buf, notes = io.StringIO(), io.StringIO()
    emit.emit(df, "table", stream=buf, notes=notes, width=width, keep=(df.columns[0],))
    return buf.getvalue() + notes.getvalue()


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_plain_rows_print_as_the_same_rows_in_a_polars_frame(data):
    """Rows of every plain type, nulls among them, read from DuckDB as a frame (store.as_frame,
    what the library returns) and as Rows: csv, tsv, markdown and latex byte for byte, and a
    terminal table at 80 columns and unbounded."""
    types = data.draw(st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=6))
    rows = data.draw(st.lists(st.tuples(*(st.one_of(st.none(), COLUMNS[t]) for t in types)), max_size=6))
    con, rel = relation(types, rows)
    frame, plain = store.as_frame(rel), Rows.of(con.sql("SELECT * FROM t"))
    assert plain.columns == tuple(frame.columns) and repr(list(plain.rows)) == repr(frame.rows())  # NaN too
    for fmt in ("csv", "tsv", "markdown", "latex"):
        assert emit.render(plain, fmt) == emit.render(frame, fmt), fmt
    for width in (80, emit.UNBOUNDED):
        assert table_text(plain, width) == table_text(frame, width)
    assert table_text(plain.select(plain.columns[::-1]).head(2), 80) == \
        table_text(frame.select(frame.columns[::-1]).head(2), 80)


def test_rows_hold_only_the_plain_types_and_say_which_column_is_not():
    con = duckdb.connect()
    with pytest.raises(TypeError, match=r"v FLOAT\[2\].*store\.as_frame"):
        Rows.of(con.sql("SELECT 'a' AS name, [0.5, 1]::FLOAT[2] AS v"))
    with pytest.raises(TypeError, match="a name given twice"):
        Rows.of(con.sql("SELECT 1 AS test, 2 AS test"))
    assert set(COLUMNS) == PLAIN_TYPES   # every type Rows holds is among the random tables' above
    one = Rows.of(con.sql("SELECT 1 AS a"))
    with pytest.raises(ValueError, match="not json"):
        emit.emit(one, "json")
    with pytest.raises(ValueError, match="column 'a' already"):
        one.with_column("a", [2], "BIGINT")
    assert one.with_column("b", ["x"], "VARCHAR").iter_rows(named=True).__next__() == {"a": 1, "b": "x"}


# ------------------------------------------------------------------ results: one query, two readers

@pytest.fixture(scope="module")
def tested(catalog_db, tmp_path_factory):
    """Word and sentence tests on GloVe: at alpha 0.002 a sentence test is significant only with
    sentences as units, p's tie, and removing one word flips several decisions."""
    db = tmp_path_factory.mktemp("plain") / "s.duckdb"
    shutil.copy(catalog_db, db)
    with stimkit.open(db) as s:
        s.test(["sent-weat5", "weat5", "weat3", "weat8"], encoders=["glove-6b-50d"], budget=2000)
    return db


def corrected_by_joins(con, method: str) -> pl.DataFrame:
    """The corrected family as stimkit read it before it was one query (v0.4: three frames
    joined in polars, `sentences_only` a polars expression), an independent reading to hold
    `corrected_relation` to."""
    sql = families.named_query(method) if method != "none" else (
        "SELECT *, count(*) OVER () AS m, p_value AS p_adjusted, p_value <= getvariable('alpha') AS rejected "
        "FROM family ORDER BY p_value, result_id")
    sql = sql.strip().rstrip(";")
    main = store.frame(con, f"SELECT *, min_p IS NULL OR min_p <= getvariable('alpha') AS can_reject FROM ({sql})")
    con.execute("SET VARIABLE word_units = true")
    by_words = store.frame(con, f"SELECT result_id, rejected AS rejected_words FROM ({sql})")
    con.execute("RESET VARIABLE word_units")
    flips = store.frame(con, """
        SELECT i.result_id, i.word AS flip_word, i.role AS flip_role, i.d_without AS flip_d, i.p_without AS flip_p
        FROM result_influence i JOIN family f USING (result_id)
        WHERE (i.p_without <= getvariable('alpha')) <> (f.p_value <= getvariable('alpha'))
        QUALIFY row_number() OVER (PARTITION BY i.result_id
                                   ORDER BY abs(i.d_without - f.effect_size) DESC NULLS LAST, i.role, i.word) = 1""")
    out = main.join(by_words, on="result_id", how="left", maintain_order="left") \
              .join(flips, on="result_id", how="left", maintain_order="left")
    return out.with_columns(sentences_only=pl.col("rejected") & ~pl.col("rejected_words").fill_null(True)
                            & (pl.col("units") == "sentences").fill_null(False))


@pytest.mark.parametrize("method", ["holm", "bonferroni", "bh", "by", "none"])
def test_the_corrected_family_is_one_query_equal_to_the_joined_frames(tested, method):
    con = store.connect(tested, read_only=True)
    try:
        for alpha in (0.002, 0.01):
            families.define_family(con, alpha=alpha, correct=method)
            got, want = families.corrected(con, method), corrected_by_joins(con, method)
            assert got.schema == want.schema and got.equals(want), (method, alpha)
            if method == "none" and alpha == 0.002:  # the fixture plants what the joins add
                assert got["flip_word"].drop_nulls().len() >= 2 and got["sentences_only"].sum() == 1
                assert got["p_value"].n_unique() < got.height   # ties, ordered by result_id
    finally:
        con.close()


CASES = [("table", None, False), ("csv", None, False), ("tsv", None, False), ("table", None, True),
         ("csv", "test,d,ci,n,flags,p_adjusted,sentences_only,flip_word", False),
         ("table", "test,encoder,d,ci,p_value,rejected,created_at,set_versions", False)]


@pytest.mark.parametrize("fmt, columns, wide", CASES)
def test_results_print_the_same_from_rows_and_from_the_frame(tested, capsys, fmt, columns, wide):
    with stimkit.open(tested, read_only=True) as s:
        frame = s.results(alpha=0.002, correct="none")
        plain = s.result_rows(alpha=0.002, correct="none")
    assert plain.family == frame.family and list(plain.rows) == frame.rows()
    assert plain.columns == tuple(frame.columns) and plain.height == frame.height == 4
    printed = []
    for df in (frame, plain):
        results_view.show(df, df.family, fmt, columns, wide)
        printed.append(capsys.readouterr())
    assert printed[0] == printed[1] and printed[0].out.count("\n") >= 4
