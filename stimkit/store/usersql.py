"""SQL a user types (set selectors, --where, property queries, `stimkit query`): it can only read.

Every such statement goes through here: `check_select` for a fragment that must be one
SELECT, `read` to run a reading statement and turn DuckDB's error into one line."""

from __future__ import annotations

import re

import duckdb

from ..errors import InputError, StoreError, UsageError, first_line  # noqa: F401  (usersql.first_line)
from .connection import as_frame

# Statement kinds a user may run with `stimkit query` (MULTI: PIVOT expands to several reading steps).
# EXPLAIN is checked on the statement it explains (EXPLAIN ANALYZE runs it: a COPY TO would write),
# PRAGMA and CALL on the function they call (a CALL can switch on logging to files or load code).
READING = {"SELECT", "EXPLAIN", "PRAGMA", "CALL", "MULTI"}
# Functions that only describe the database or the engine.
READ_PRAGMAS = {"show_tables", "show_tables_expanded", "table_info", "show", "database_size", "storage_info",
                "version", "platform", "functions", "collations", "metadata_info", "database_list",
                "user_agent", "show_databases"}
_CALLED = re.compile(r"^\s*(?:PRAGMA|CALL)\s+([A-Za-z_][A-Za-z0-9_]*)", re.I)
_EXPLAIN = re.compile(r"^\s*EXPLAIN(?:\s+ANALY[SZ]E)?\s+", re.I)


def check_select(sql: str, what: str) -> str:
    """`sql` if it is exactly one SELECT statement (DuckDB's own parser decides), else a
    one-line error: a fragment a user typed can only read."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise UsageError(f"{what}: {first_line(e)}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(s.type.name for s in statements) or "nothing"
        raise UsageError(f"{what}: must be a single SELECT statement (found: {kinds})")
    return sql.strip().rstrip(";").strip()


def check_reading(sql: str) -> str:
    """One reading statement (`stimkit query`): writes are refused before they run."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise UsageError(f"query failed: {first_line(e)}") from None
    if len(statements) != 1:
        raise UsageError(f"query: one statement at a time, not {len(statements)}")
    kind = statements[0].type.name
    if kind not in READING:
        raise UsageError(f"query can only read: a {kind} statement is refused (writes go through stimkit commands)")
    query = statements[0].query
    if kind == "EXPLAIN":
        inner = _EXPLAIN.sub("", query, count=1)
        if inner == query:  # EXPLAIN with options in parentheses: nothing we can check, so refused
            raise UsageError("query can only read: write EXPLAIN [ANALYZE] followed by a SELECT")
        check_reading(inner)
        if duckdb.extract_statements(inner)[0].type.name not in ("SELECT", "MULTI"):
            raise UsageError("query can only read: EXPLAIN of a statement other than a SELECT is refused")
    elif kind in ("PRAGMA", "CALL"):
        m = _CALLED.match(query)
        name = m.group(1).lower() if m else "?"
        allowed = name.startswith("duckdb_") or name.removeprefix("pragma_") in READ_PRAGMAS
        if not allowed:
            raise UsageError(f"query can only read: {kind} {name} is refused (allowed: duckdb_* functions and "
                             f"{', '.join(sorted(READ_PRAGMAS))})")
    return sql.strip().rstrip(";")


AS_TEXT = ("VARIANT",)  # DuckDB types polars has no type for


def read(con, sql: str, params=None, what: str = "query"):
    """Run a (checked) reading statement; a polars frame, or one line naming `what`."""
    try:
        rel = con.sql(sql, params=params or None)
        loose = [c for c, t in zip(rel.columns, rel.types) if str(t).startswith(AS_TEXT)]
        if loose:  # types a frame cannot hold or print (VARIANT: duckdb_settings()) are read as text
            quoted = {c: '"' + c.replace('"', '""') + '"' for c in rel.columns}
            rel = rel.project(", ".join(f"{q}::VARCHAR AS {q}" if c in loose else q for c, q in quoted.items()))
        return as_frame(rel)
    except duckdb.Error as e:
        if isinstance(e, duckdb.IOException) and (path := _store_path(con)) and path in str(e):
            raise StoreError(f"{path}: damaged store: {first_line(e)}") from None  # the store's own file, not the user's
        raise InputError(f"{what} failed: {first_line(e)}") from None


def _store_path(con) -> str | None:
    try:
        found = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    except duckdb.Error:
        return None
    return found[0][0] if found and found[0][0] else None

