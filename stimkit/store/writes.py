"""The one write path for rows (results, items, WEFAT, audits, vectors, stimuli): `insert`,
and `start_run`, which every writing run begins with; `all_or_nothing`, which makes a
command's sets, vectors and results one unit (store.journal)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
import uuid

import duckdb

from .. import __version__
from . import journal
from .connection import refresh_vector_view, transaction


def column(default=None, *, stored: bool = True):
    """A dataclass field; `stored=False` keeps it out of the table (e.g. a result's items)."""
    return dataclasses.field(default=default, metadata={"stored": stored})


def as_record(row) -> dict:
    """A dataclass row as {column: value}, without its fields that are not stored."""
    return {f.name: getattr(row, f.name) for f in dataclasses.fields(row) if f.metadata.get("stored", True)}


def insert(con, table: str, rows, keep_stored: bool = False) -> int:
    """Append rows to `table`, matching columns by name: a list of dataclass instances or of
    {column: value} records, or an Arrow table or polars frame. keep_stored: a row whose key is stored already is left as it
    is. Returns the number of rows given. The caller owns the transaction."""
    if isinstance(rows, list):
        if not rows:
            return 0
        import polars as pl  # not pyarrow's from_pylist: its conversion of Python values imports pandas (0.5 s)

        rows = pl.DataFrame([r if isinstance(r, dict) else as_record(r) for r in rows], infer_schema_length=None)
    if hasattr(rows, "to_arrow"):  # a polars frame
        rows = rows.to_arrow()
    if rows.num_rows == 0:
        return 0
    name = f"_insert_{table}"
    con.register(name, rows)
    try:
        journal.note_insert(con, table, name, keep_stored)  # a pending command's new rows of sets and vectors
        con.execute(f'INSERT {"OR IGNORE " if keep_stored else ""}INTO {table} BY NAME SELECT * FROM "{name}"')
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses even this: the first error counts
            con.unregister(name)
        raise
    con.unregister(name)
    return rows.num_rows


def start_run(con, command: str, seed: int, study: str | None = None, alpha: float | None = None,
              correction: str | None = None) -> str:
    """A new run id (a timestamp, so ids sort by time) recorded with its command and seed, and
    a study's name, alpha and correction (the defaults of reading its results)."""
    run_id = time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
    journal.finish(con)  # the command's sets and vectors commit with its run, in this transaction
    con.execute("INSERT INTO runs (run_id, command, seed, stimkit_version, study, alpha, correction) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", [run_id, command, seed, __version__, study, alpha, correction])
    return run_id


def all_or_nothing(method):
    """A writing Store method (`test`, `audit_perturb`) whose sets, vectors and results are one
    unit: the rows of sets and vectors it adds are noted as pending until the transaction that
    stores its run (start_run); when it fails they are removed at once, when it is killed at
    the next writing open (store.journal). A method called inside another joins its unit."""
    @functools.wraps(method)
    def unit(self, *args, **kwargs):
        if getattr(self, "read_only", False):
            return method(self, *args, **kwargs)
        con = self.con
        if journal.token_of(con) is not None:
            return method(self, *args, **kwargs)
        with transaction(con):
            token = journal.begin(con, str(kwargs.get("command") or method.__name__))
        file = journal.database(con)
        try:
            out = method(self, *args, **kwargs)
        except BaseException:
            journal.leave(file, token)
            with contextlib.suppress(Exception):  # else the next open removes it
                con = self.con
                with transaction(con):
                    journal.discard(con, token)
                    refresh_vector_view(con)
            raise
        journal.leave(file, token)
        con = self.con  # no run stored (nothing to run): what it made stays, as `generate` keeps it
        with transaction(con):
            con.execute("DELETE FROM pending_rows WHERE token = ?", [token])
            con.execute("DELETE FROM pending_work WHERE token = ?", [token])
        return out
    return unit


def latest_study_run(con, study: str) -> str | None:
    """The newest run of the study that records its members (run_results, db/024)."""
    from .connection import one

    row = one(con, "SELECT run_id FROM runs WHERE study = ? AND run_id IN (SELECT run_id FROM run_results) "
                   "ORDER BY started_at DESC, run_id DESC LIMIT 1", [study])
    return row[0] if row else None
