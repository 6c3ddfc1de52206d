"""The DuckDB store: connection, forward-only schema migrations, all-or-nothing writes."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import duckdb

from ..errors import StoreError, first_line as _first_line
from ..paths import data_dir, default_db
from . import journal

_MIGRATION = re.compile(r"^(\d+)_.*\.sql$")


def migrations() -> list[tuple[int, Path]]:
    found = []
    for p in sorted(data_dir("db").glob("*.sql")):
        m = _MIGRATION.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return found


LOCK_TIMEOUT = float(os.environ.get("STIMKIT_LOCK_TIMEOUT", "120"))


def connect(path: str | Path | None = None, read_only: bool = False, wait: float | None = None,
            on_wait=None, allow_files: bool = False, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """Open the store (read-write: bring its schema up to date, each migration once).

    A read-only open never creates a store. DuckDB lets one process write or many read:
    while another process holds the file, retry for up to `wait` seconds (default
    STIMKIT_LOCK_TIMEOUT, 120), telling `on_wait` once what we wait for.

    SQL on the store cannot reach files on the host (stimkit itself never needs it; user
    SQL must not): `allow_files` lifts that, for `stimkit query --allow-files`."""
    from .. import UsageError

    path = Path(path) if path is not None else default_db()
    if read_only and not path.exists():
        raise UsageError(f"no store at {path}: run `stimkit generate` first")
    deadline = time.monotonic() + (LOCK_TIMEOUT if wait is None else wait)
    told = False
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only, config=_config(allow_files, threads))
            break
        except duckdb.IOException as e:
            if "lock" not in str(e).lower() or time.monotonic() > deadline:
                raise StoreError(f"{path}: cannot open store: {_first_line(e)}") from None
            if not told and on_wait is not None:
                on_wait(f"waiting for {path}: another process is {'writing to' if read_only else 'using'} it")
                told = True
            time.sleep(0.1)
        except duckdb.ConnectionException as e:
            if not (read_only and "different configuration" in str(e)):
                raise StoreError(f"{path}: cannot open store: {_first_line(e)}") from None
            # This process already has the store open for writing (a notebook, a test): share
            # that database; a reader still only reads (its SQL is checked to be SELECTs).
            con = duckdb.connect(str(path), config=_config(allow_files, threads))
            break
        except duckdb.Error as e:
            raise StoreError(f"{path}: cannot open store: {_first_line(e)}") from None
    try:
        check_schema(con, path, read_only)
        if not read_only:
            migrate(con)
            recover(con)
    except BaseException:
        con.close()
        raise
    return con


def holds_nothing(path: str | Path) -> bool:
    """Whether a store file holds nothing but its schema (no row in any table besides
    schema_migrations); False for a file another process has open."""
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False  # another process has it: it is not ours to judge
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_type = "
                                            "'BASE TABLE' AND table_name <> 'schema_migrations'").fetchall()]
        return all(not con.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchall() for t in tables)
    finally:
        con.close()


def refresh_vector_view(con) -> None:
    """(Re)define `stimulus_vectors`: current stimuli joined to their vectors, for every
    encoder and every embeddings_<dim> table (vectors as FLOAT[] so dimensions mix)."""
    tables = [t for (t,) in rows(con, "SELECT table_name FROM information_schema.tables "
                                      "WHERE regexp_matches(table_name, '^embeddings_[0-9]+$') ORDER BY 1")]
    if not tables:  # as migration 007 made it (a command undone may have dropped the last table)
        con.execute("""CREATE OR REPLACE VIEW stimulus_vectors AS
            SELECT NULL::VARCHAR AS set_name, NULL::VARCHAR AS set_version, NULL::INTEGER AS ordinal,
                   NULL::VARCHAR AS word, NULL::VARCHAR AS template_id, NULL::VARCHAR AS stimulus,
                   NULL::VARCHAR AS encoder, NULL::VARCHAR AS fingerprint, NULL::INTEGER AS dim,
                   NULL::FLOAT[] AS vector, NULL::VARCHAR AS note
            WHERE false""")
        return
    parts = [f"""
        SELECT s.set_name, s.set_version, s.ordinal, s.word, s.template_id, s.stimulus, enc.spec AS encoder,
               enc.fingerprint, enc.dim, e.vector::FLOAT[] AS vector, e.note
        FROM current_stimuli s
        JOIN {t} e ON e.text = s.stimulus
             AND (e.span_start = -1 OR (e.span_start = s.span_start AND e.span_end = s.span_end))
        JOIN encoders enc ON enc.fingerprint = e.fingerprint""" for t in tables]
    con.execute("CREATE OR REPLACE VIEW stimulus_vectors AS " + " UNION ALL ".join(parts))


def _config(allow_files: bool, threads: int | None = None) -> dict:
    """DuckDB's own guards on every connection: no host files unless asked, no extension
    loaded or installed behind our back, and the configuration locked, so SQL cannot turn
    logging, paths or external access back on (`SET`, `CALL enable_logging(...)`)."""
    config = {"enable_external_access": bool(allow_files), "autoload_known_extensions": False,
              "autoinstall_known_extensions": False, "lock_configuration": True}
    if threads:  # a writer beside a running model: DuckDB's own threads would take the model's cores
        config["threads"] = int(threads)
    return config



def check_schema(con, path, read_only: bool) -> None:
    """Refuse a DuckDB file that is not a stimkit store (tables but no schema marker, or a
    marker naming migrations stimkit never had) before anything is written to it; a store
    from a newer stimkit (its tables may mean other things); and a read-only open of an
    older one (its views are missing until a write migrates it)."""
    from .. import __version__

    check_marker(con, path)
    have, known = schema_version(con), max(n for n, _ in migrations())
    applied = {n for (n,) in rows(con, "SELECT version FROM schema_migrations")} if have else set()
    if have > known:
        raise StoreError(f"{path}: made by a newer stimkit (schema {have}; stimkit {__version__} knows {known}): upgrade stimkit")
    if read_only and applied != {n for n, _ in migrations()}:
        raise StoreError(f"{path}: schema {have} is older than this stimkit's ({known}): "
                           "run a writing command (e.g. `stimkit generate`) once to upgrade it")


def check_marker(con, path) -> None:
    """A StoreError unless the file is empty or carries stimkit's schema marker
    (`schema_migrations` rows named after stimkit's own migration files)."""
    try:
        tables = [t for (t,) in rows(con, "SELECT table_name FROM information_schema.tables "
                                          "WHERE table_catalog = current_database() ORDER BY 1")]
    except duckdb.Error as e:
        raise StoreError(f"{path}: damaged store: {_first_line(e)}") from None
    check_size(con, path)
    if not tables:
        return  # a new, empty file: ours to initialise
    if "schema_migrations" not in tables:
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise StoreError(f"{path}: not a stimkit store (it holds other tables: {shown}); use another --db path")
    try:
        marks = rows(con, "SELECT version, name FROM schema_migrations")
    except duckdb.Error as e:
        raise StoreError(f"{path}: not a stimkit store (schema_migrations unreadable: {_first_line(e)})") from None
    ours = {number: p.name for number, p in migrations()}
    strange = [(n, name) for n, name in marks if n in ours and ours[n] != name]
    if strange:
        raise StoreError(f"{path}: not a stimkit store (schema_migrations names {strange[0][1]!r} for "
                         f"migration {strange[0][0]}, stimkit's is {ours[strange[0][0]]!r})")


def check_size(con, path) -> None:
    """A truncated file opens (DuckDB reads blocks lazily) and fails at some later read:
    refuse it at once, when the file is shorter than the blocks in use that its header counts.
    (Free blocks at the end are not in the file: DuckDB trims them, so they do not count.)"""
    if str(path) == ":memory:" or not Path(path).exists():
        return
    try:
        found = rows(con, "SELECT block_size, used_blocks FROM pragma_database_size() WHERE database_name = current_database()")
    except duckdb.Error as e:
        raise StoreError(f"{path}: damaged store: {_first_line(e)}") from None
    if found and Path(path).stat().st_size < found[0][0] * found[0][1]:
        raise StoreError(f"{path}: damaged store: the file is {Path(path).stat().st_size} bytes, its header counts "
                         f"{found[0][1]} blocks in use of {found[0][0]} bytes (truncated?)")


def schema_version(con) -> int:
    try:
        return one(con, "SELECT coalesce(max(version), 0) FROM schema_migrations")[0]
    except duckdb.CatalogException:
        return 0


def migrate(con) -> int:
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP DEFAULT current_timestamp)"
    )
    applied = {n for (n,) in rows(con, "SELECT version FROM schema_migrations")}
    for number, path in migrations():
        if number in applied:  # each once, in order; one missing from the middle is applied too
            continue
        with transaction(con):
            con.execute(path.read_text())
            con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [number, path.name])
            refresh_vector_view(con)
    return schema_version(con)


def recover(con) -> int:
    """Remove the unfinished work of commands that were killed (store.journal); returns how
    many of their rows were noted."""
    removed = 0
    if not one(con, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'pending_work' AND NOT temporary")[0]:
        return 0  # a schema from before db/026 (a test's store held at an old version): nothing noted
    for token in journal.stale(con):
        with transaction(con):
            removed += journal.discard(con, token)
            refresh_vector_view(con)  # a vector table it made may be gone
    journal.forget_finished(con)
    return removed


_open_transactions: set[int] = set()


class transaction:
    """All or nothing: an exception rolls every statement back. A transaction opened
    inside another joins it (DuckDB has no nested transactions).

    A class, not a generator: a Ctrl-C that lands between a generator's `yield` and the
    `with` block left the generator suspended, to roll back on a closed connection when
    collected (a traceback on stderr). Here no exit runs then, and closing the connection
    discards the uncommitted transaction."""

    def __init__(self, con):
        self.con, self.joined, self.mark = con, False, None

    def __enter__(self):
        self.joined = id(self.con) in _open_transactions
        if not self.joined:
            self.con.execute("BEGIN TRANSACTION")
            _open_transactions.add(id(self.con))
            try:
                self.mark = journal.log_mark(self.con)  # a pending command's: where its set_log rows begin
            except BaseException:
                self.__exit__(BaseException, None, None)
                raise
        return self.con

    def __exit__(self, kind, error, tb) -> bool:
        if self.joined:
            return False
        try:
            if kind is None:
                try:
                    journal.note_log(self.con, self.mark)
                except BaseException:
                    self.con.execute("ROLLBACK")
                    raise
            self.con.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            _open_transactions.discard(id(self.con))
        return False


def next_seq(con, table: str = "set_log") -> int:
    return one(con, f"SELECT coalesce(max(seq), 0) + 1 FROM {table}")[0]


# DuckDB 2.0 leaves a result "unfinished" until fetched to the end, and then refuses
# con.sql(); these helpers always fetch everything.
def rows(con, sql: str, params=None) -> list[tuple]:
    return con.execute(sql, params or []).fetchall()


def one(con, sql: str, params=None):
    found = rows(con, sql, params)
    return found[0] if found else None


def frame(con, sql: str, params=None):
    """A polars DataFrame of the query's result."""
    return as_frame(con.sql(sql, params=params or None))


def as_frame(rel):
    """A relation's rows as a polars DataFrame, through the Arrow C stream interface: the same
    frame as `rel.pl()`, which goes through pyarrow (0.1-0.2 s of a read command's start)."""
    import polars as pl

    if len(set(rel.columns)) < len(rel.columns):  # a name twice: .pl() makes them unique (test, test_1)
        return rel.pl()
    return pl.DataFrame(rel)
