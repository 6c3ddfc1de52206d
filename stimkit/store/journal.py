"""The work a writing command has stored before its results: marked while it runs, removed
when it does not finish.

A command such as `test` or `audit perturb` commits in several steps: it generates the sets
it lacks, encodes them (the store closed, so other processes may read it meanwhile, each
append a transaction of its own), then stores its results. Killed between them, it would
leave sets that are current and vectors with no result beside them. So while the command
runs (store.writes.all_or_nothing), every row it adds to the tables of sets (their stimuli,
input keys and log entries), encoders and vectors is noted in `pending_rows` under its
`pending_work` token, in the transaction that adds it; the transaction that stores its
results (store.start_run) removes the notes. A command that fails removes its noted rows
itself; one killed leaves its token, and the next writing open of the store (store.connect)
removes the rows of every token whose process is gone (and a vector table left empty and of no
encoder).

Set versions are content hashes and otherwise never deleted: one is removed only while no
other command has logged it and no result names it.
"""

from __future__ import annotations

import os
import re
import socket
import uuid

# the tables whose rows a command's unfinished work consists of, and the columns that name a row
# (a set's rows by its version, a vector by its key)
_SET_TABLES = {"stimulus_sets": ("version",), "stimuli": ("set_version",), "stimulus_slots": ("set_version",),
               "slot_words": ("set_version",)}
_VECTOR_KEY = ("fingerprint", "text", "span_start", "span_end")
_VECTOR_TABLE = re.compile(r"embeddings_[0-9]+")
_ROW_TABLES = {"set_inputs": ("input_key",),   # removed row by row, whatever else stays (a set's input key)
               # a train's family, replicates and their vectors (db/033), each replicate committed as it finishes
               "trained_families": ("name",), "trained_models": ("fingerprint",), "trained_vectors": ("fingerprint",),
               "token_scores": ("fingerprint", "text"),  # a scored text's rows (db/030), whole
               "pair_tokens": ("fingerprint", "pair_id")}

_active: dict[str, str] = {}   # database file -> the token of this process's command writing to it


def alive(pid: int) -> bool:
    """Whether a process with this id is running (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _host() -> str:
    return socket.gethostname()


def database(con) -> str:
    """The file of a connection's database ('' in memory)."""
    (path,), = con.execute("SELECT coalesce(path, '') FROM duckdb_databases() "
                           "WHERE database_name = current_database()").fetchall()
    return os.path.realpath(path) if path else ""


def token_of(con) -> str | None:
    """The token of the command of this process that is writing to con's store, if any."""
    if not _active:
        return None
    return _active.get(database(con))


def key_columns(table: str) -> tuple[str, ...] | None:
    if table in _SET_TABLES:
        return _SET_TABLES[table]
    if table in _ROW_TABLES:
        return _ROW_TABLES[table]
    return _VECTOR_KEY if _VECTOR_TABLE.fullmatch(table) else None


def begin(con, command: str) -> str:
    """Mark a command's work as pending (committed at once: a kill from here on is seen)."""
    token = uuid.uuid4().hex
    con.execute("INSERT INTO pending_work (token, pid, host, command) VALUES (?, ?, ?, ?)",
                [token, os.getpid(), _host(), command[:200]])
    _active[database(con)] = token
    return token


def leave(con_file: str, token: str) -> None:
    """This process stops noting rows for the token."""
    if _active.get(con_file) == token:
        del _active[con_file]


def note_insert(con, table: str, registered: str, keep_stored: bool) -> None:
    """Inside the transaction of an insert into `table` of the rows registered as `registered`:
    note those of its rows that are new, by their key, for the command writing to this store.
    (Without keep_stored every row is new, or the insert fails: the table is not read. A set's
    rows that come in chunks note its version once a chunk: the notes are read as distinct.)"""
    token = token_of(con)
    columns = key_columns(table) if token else None
    if not columns:
        return
    key = "[" + ", ".join(f'r."{c}"::VARCHAR' for c in columns) + "]"
    new = ""
    if keep_stored:
        new = "WHERE NOT EXISTS (SELECT 1 FROM \"{}\" t WHERE {})".format(
            table, " AND ".join(f't."{c}" = r."{c}"' for c in columns))
    con.execute(f'INSERT INTO pending_rows (token, tbl, key) SELECT DISTINCT ?, ?, {key} FROM "{registered}" r {new}',
                [token, table])


def log_mark(con) -> tuple | None:
    """At the start of a transaction of the command: the highest set_log seq and the encoders
    known (the sets it makes current are logged after that seq, and the encoders it registers
    are new, while this process holds the store)."""
    if token_of(con) is None:
        return None
    (seq,), = con.execute("SELECT coalesce(max(seq), 0) FROM set_log").fetchall()
    return seq, {f for (f,) in con.execute("SELECT fingerprint FROM encoders").fetchall()}


def note_log(con, mark: tuple | None) -> None:
    """Before the transaction commits: note the set_log rows and the encoders it added."""
    token = token_of(con) if mark is not None else None
    if not token:
        return
    seq, known = mark
    con.execute("INSERT INTO pending_rows (token, tbl, key) SELECT ?, 'set_log', [seq::VARCHAR] FROM set_log "
                "WHERE seq > ?", [token, seq])
    new = [f for (f,) in con.execute("SELECT fingerprint FROM encoders").fetchall() if f not in known]
    if new:
        con.executemany("INSERT INTO pending_rows (token, tbl, key) VALUES (?, 'encoders', [?])",
                        [[token, f] for f in new])


def finish(con) -> None:
    """In the transaction that stores the command's results: its work is no longer pending."""
    token = token_of(con)
    if token:
        con.execute("DELETE FROM pending_rows WHERE token = ?", [token])
        con.execute("DELETE FROM pending_work WHERE token = ?", [token])


def forget_finished(con) -> None:
    """Drop notes whose command has stored its run (its token gone): rows it added after that
    are its own, kept (a command killed after its run stored keeps what it stored)."""
    con.execute("DELETE FROM pending_rows WHERE token NOT IN (SELECT token FROM pending_work)")


def stale(con) -> list[str]:
    """The tokens of commands that are no longer running (on this machine: their process is
    gone; a token of another machine is left to it)."""
    here = _host()
    return [t for t, pid, host in con.execute("SELECT token, pid, host FROM pending_work").fetchall()
            if host == here and not alive(pid) and t not in _active.values()]


def discard(con, token: str) -> int:
    """Remove the rows noted for `token`, and its marks; the caller owns the transaction.
    Returns how many notes there were."""
    notes = con.execute("SELECT tbl, count(*) FROM pending_rows WHERE token = ? GROUP BY tbl", [token]).fetchall()
    tables = {t for t, _ in notes}
    if "set_log" in tables:
        con.execute("DELETE FROM set_log WHERE seq::VARCHAR IN (SELECT key[1] FROM pending_rows "
                    "WHERE token = ? AND tbl = 'set_log')", [token])
    for table in sorted(t for t in tables if _VECTOR_TABLE.fullmatch(t) or t in _ROW_TABLES):
        key = "[" + ", ".join(f'"{c}"::VARCHAR' for c in key_columns(table)) + "]"
        con.execute(f'DELETE FROM "{table}" WHERE {key} IN (SELECT key FROM pending_rows WHERE token = ? AND tbl = ?)',
                    [token, table])
    versions = [v for (v,) in con.execute(
        "SELECT DISTINCT key[1] FROM pending_rows WHERE token = ? AND tbl IN ('stimulus_sets', 'stimuli', "
        "'stimulus_slots', 'slot_words')", [token]).fetchall()]
    for v in versions:
        if not _used(con, v):
            for table, (column,) in _SET_TABLES.items():
                con.execute(f'DELETE FROM "{table}" WHERE "{column}" = ?', [v])
    for (fp,) in con.execute("SELECT DISTINCT key[1] FROM pending_rows WHERE token = ? AND tbl = 'encoders'",
                             [token]).fetchall():
        if not _names(con, fp, "fingerprint", skip=lambda t: t == "encoders"):
            con.execute("DELETE FROM encoders WHERE fingerprint = ?", [fp])
    for (table,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_catalog = "
                                "current_database() AND regexp_matches(table_name, '^embeddings_[0-9]+$')").fetchall():
        # a vector table the command created, now empty and of no encoder: as it was, not there
        if not con.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchall() and not con.execute(
                "SELECT 1 FROM encoders WHERE vector_table = ? LIMIT 1", [table]).fetchall():
            con.execute(f'DROP TABLE "{table}"')
    con.execute("DELETE FROM pending_rows WHERE token = ?", [token])
    con.execute("DELETE FROM pending_work WHERE token = ?", [token])
    return sum(n for _, n in notes)


def _used(con, version: str) -> bool:
    """Whether a set version is logged, or named by any row but its own sets' (a result's
    set_versions, an item's set_version): then another command has it, and it stays."""
    if con.execute("SELECT 1 FROM set_log WHERE version = ? LIMIT 1", [version]).fetchall():
        return True
    return _names(con, version, "set_version", skip=lambda t: t in _SET_TABLES)


def _names(con, value: str, column: str, skip) -> bool:
    """Whether a row of any table but those `skip` says, in `column` (or its list `column`s),
    names `value`."""
    refs = con.execute("SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
                       "JOIN information_schema.tables t USING (table_catalog, table_schema, table_name) "
                       "WHERE t.table_type = 'BASE TABLE' AND c.column_name IN (?, ?) "
                       "AND c.table_catalog = current_database()", [column, column + "s"]).fetchall()
    for table, name, kind in refs:
        if skip(table):
            continue
        test = f'list_contains("{name}", ?)' if kind.endswith("[]") else f'"{name}" = ?'
        if con.execute(f'SELECT 1 FROM "{table}" WHERE {test} LIMIT 1', [value]).fetchall():
            return True
    return False
