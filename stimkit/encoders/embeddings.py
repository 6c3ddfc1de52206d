"""The embedding store: vectors keyed by encoder fingerprint and content, never by test.

Encoding is resumable: only (text, span) pairs without a stored vector are encoded,
in batches committed by a writer thread, so a killed run keeps what it finished.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Callable

import numpy as np
import polars as pl
import pyarrow as pa

from .. import StimkitError, store
from ..choices import ENGINES, check_choice
from . import Encoder

NO_SPAN = -1


def vector_table(dim: int) -> str:
    return f"embeddings_{int(dim)}"


def register(con, enc: Encoder) -> str:
    """Record the encoder (each layer of a layer sweep) and make sure its vector table exists;
    returns the fingerprint."""
    targets = enc.layer_encoders()
    if targets != [enc]:
        for target in targets:
            register(con, target)
        return enc.fingerprint
    fp, dim, table = enc.fingerprint, enc.dim, vector_table(enc.dim)
    with store.transaction(con):
        con.execute(f"""
            CREATE TABLE IF NOT EXISTS {table} (
                fingerprint VARCHAR NOT NULL,
                text        VARCHAR NOT NULL,
                span_start  INTEGER NOT NULL,
                span_end    INTEGER NOT NULL,
                vector      FLOAT[{dim}],
                oov         VARCHAR[],
                note        VARCHAR,
                encoded_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
                PRIMARY KEY (fingerprint, text, span_start, span_end)
            )""")
        store.refresh_vector_view(con)
        if not store.one(con, "SELECT 1 FROM encoders WHERE fingerprint = ?", [fp]):
            con.execute(
                "INSERT INTO encoders (fingerprint, spec, name, dim, uses_span, vector_table, details) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [fp, enc.spec, enc.name, dim, enc.uses_span, table, json.dumps(enc.details(), default=str)],
            )
    return fp


def shared(needs: list[tuple[Encoder, pl.DataFrame]]) -> list[tuple[Encoder, pl.DataFrame]]:
    """(encoder, stimuli) pairs with the poolings of one transformer's forward pass joined into
    one SharedPass (encoders.transformer) over the stimuli any of them reads."""
    from .transformer import shared_passes  # numpy and the standard library only: no torch

    return shared_passes(needs, lambda frames: pl.concat(frames, how="vertical_relaxed").unique(maintain_order=True))


def planned(enc: Encoder) -> list[Encoder]:
    """The plan's encoders an encode of `enc` stands for: a shared pass's members, else itself."""
    return list(getattr(enc, "members", [enc]))


def stimuli_of(frames) -> pl.DataFrame:
    """The stimulus texts and spans of several selected sets, stacked: what an encoder reads."""
    return pl.concat([f.select("stimulus", "span_start", "span_end") for f in frames], how="vertical_relaxed")


def items_for(enc: Encoder, stimuli: pl.DataFrame) -> pl.DataFrame:
    """The distinct (text, span_start, span_end) keys an encoder needs for these stimuli."""
    empty = stimuli.filter(pl.col("stimulus").str.strip_chars() == "")
    if empty.height:
        where = empty.row(0, named=True)
        raise StimkitError(f"empty text in stimulus set {where.get('set_name', '?')} (word {where.get('word')!r}): nothing to encode")
    if enc.uses_span and ("span_start" not in stimuli.columns or stimuli["span_start"].null_count()):
        raise StimkitError(f"encoder {enc.spec!r} needs the word's span, and some stimuli have none")
    return keys(enc, stimuli).unique(maintain_order=True)


def keys(enc: Encoder, stimuli: pl.DataFrame) -> pl.DataFrame:
    """The store key of each stimulus row: its text, and its span only if the encoder reads it."""
    if enc.uses_span:
        return stimuli.select(pl.col("stimulus").alias("text"), pl.col("span_start").cast(pl.Int32),
                              pl.col("span_end").cast(pl.Int32))
    return stimuli.select(pl.col("stimulus").alias("text")).with_columns(
        span_start=pl.lit(NO_SPAN, pl.Int32), span_end=pl.lit(NO_SPAN, pl.Int32))


def missing(con, enc: Encoder, items: pl.DataFrame) -> pl.DataFrame:
    """The items without a stored vector (for a layer sweep or a shared pass: without one in any
    of its encoders), in the items' order: a transformer batches texts by length in the order
    it gets them, and another order gives other batches, other padding and vectors that differ
    in the last float bits (a join's output order is DuckDB's to choose)."""
    table = vector_table(enc.dim)
    fps = [e.fingerprint for e in enc.layer_encoders()]
    con.register("_wanted", items.with_row_index("_order").to_arrow())
    try:
        return store.frame(con, f"""
            SELECT w.* EXCLUDE (_order) FROM _wanted w
            WHERE (SELECT count(*) FROM {table} e WHERE e.fingerprint IN ({", ".join("?" * len(fps))})
                     AND e.text = w.text AND e.span_start = w.span_start AND e.span_end = w.span_end) < {len(fps)}
            ORDER BY w._order""",
            fps) if len(fps) > 1 else store.frame(con, f"""
            SELECT w.* EXCLUDE (_order) FROM _wanted w
            ANTI JOIN (SELECT text, span_start, span_end FROM {table} WHERE fingerprint = ?) e
              USING (text, span_start, span_end)
            ORDER BY w._order""", fps)
    finally:
        con.unregister("_wanted")


def _arrow_vectors(vectors: np.ndarray) -> pa.Array:
    """The vectors as an Arrow fixed-size list column, NULL where a row is not finite. Built
    from the numpy buffers: pa.array() would import pandas (0.2 s of the first append)."""
    n, dim = vectors.shape
    null = ~np.isfinite(vectors).all(axis=1)
    values = np.ascontiguousarray(np.nan_to_num(vectors, nan=0.0), dtype=np.float32).ravel()
    flat = pa.Array.from_buffers(pa.float32(), values.size, [None, pa.py_buffer(values)])
    mask = (pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(null, bitorder="little"))])
            if null.any() else None)
    return pa.FixedSizeListArray.from_arrays(flat, dim, mask=mask)


def check_shape(enc: Encoder, batch: pl.DataFrame, encoded) -> None:
    layers = len(enc.layer_encoders())
    expected = (batch.height, layers, enc.dim) if layers > 1 else (batch.height, enc.dim)
    if encoded.vectors.shape != expected:
        raise StimkitError(f"encoder {enc.spec!r} returned shape {encoded.vectors.shape}, expected {expected}")


def batch_table(enc: Encoder, batch: pl.DataFrame, encoded) -> pa.Table:
    """One encoded batch as the Arrow rows of its vector table (a layer sweep's vectors
    (rows, layers, dim): the rows of every layer, each under its layer's fingerprint)."""
    if encoded.vectors.ndim == 3:
        return pa.concat_tables([
            batch_table(target, batch, type(encoded)(encoded.vectors[:, i], encoded.oov, encoded.notes))
            for i, target in enumerate(enc.layer_encoders())])
    # the columns through polars (no pandas import), the vectors from their buffers
    columns = pl.DataFrame({
        "fingerprint": pl.repeat(enc.fingerprint, batch.height, dtype=pl.String, eager=True),
        "text": batch["text"].cast(pl.String), "span_start": batch["span_start"], "span_end": batch["span_end"],
        "oov": pl.Series(encoded.oov, dtype=pl.List(pl.String)), "note": pl.Series(encoded.notes, dtype=pl.String),
    }).to_arrow()
    return columns.append_column("vector", _arrow_vectors(encoded.vectors))


def append(con, dim: int, table: pa.Table, keep_stored: bool = False) -> None:
    """One Arrow append of any number of rows, in one transaction. keep_stored: rows already
    stored are left as they are (a layer sweep re-encodes a text some layers already have)."""
    with store.transaction(con):
        store.insert(con, vector_table(dim), table, keep_stored)


class Writer:
    """Appends encoded batches to the store from its own thread, so the model never waits for
    DuckDB. It owns a cursor (its own connection to the same database: DuckDB connections are
    not shared across threads) and, each time it wakes, appends everything queued in one
    transaction: large appends when the model is fast, prompt ones when it is slow. The queue
    is bounded, so vectors never pile up in memory. close() commits what is queued, also when
    the encode was interrupted. Inside a transaction the caller opened, it appends in line.

    Given a path, each append opens the store and closes it again (a checkpoint each time, tens
    of milliseconds of CPU that the model would otherwise have): so it appends at most every
    `every` seconds, or sooner once `most_bytes` of vectors wait. An append per batch cost the
    6,648-text MiniLM encode about 7% of its speed on two cores.

    A model on the CPU has every core already: a writer thread beside it only makes torch's
    threads wait for the core it took (on 20,236 HolisticBias sentences, 1-3 s of 28 for 0.5 s
    of appending). Then (`threaded=False`, the default for an encoder on the CPU) the appends
    run in the encoding thread, between batches, and further apart on a store where each one
    is slow."""

    def __init__(self, con, enc: Encoder, total: int, progress: Callable[[int, int], None] | None = None,
                 queued: int = 8, path=None, every: float = 5.0, most_bytes: int = 64 << 20,
                 threaded: bool | None = None):
        self.enc, self.total, self.progress = enc, total, progress
        self.sweep = len(enc.layer_encoders()) > 1
        self.written, self.error, self.thread = 0, None, None
        if progress and total:  # the work begins (a bar appears); with nothing to encode, no call at all
            progress(0, total)
        # Inside the caller's open transaction another connection would not see its uncommitted
        # tables, and the caller wants all or nothing anyway: append in line, on its connection.
        self.inline = con is not None and id(con) in store._open_transactions
        # Given a path instead of a connection, each append opens the store and closes it again,
        # so other processes can read it between appends.
        self.path = path
        self.every, self.most_bytes = (every, most_bytes) if path is not None else (0.0, 0)
        self.cursor = None if path is not None else (con if self.inline else con.cursor())
        # a GPU (or any device but the CPU) computes while a thread appends; the CPU does not
        self.threaded = (getattr(enc, "device", "cpu") != "cpu") if threaded is None else threaded
        self.pending, self.size, self.last = [], 0, float("-inf")  # in line: what waits, since the last append
        self.append_seconds = 0.0                                  # how long the last one took
        if not self.inline and self.threaded:
            self.queue: queue.Queue = queue.Queue(maxsize=queued)
            self.thread = threading.Thread(target=self._run, name="stimkit-writer", daemon=True)
            self.thread.start()

    def put(self, keys: pl.DataFrame, encoded) -> None:
        check_shape(self.enc, keys, encoded)
        if self.inline:
            append(self.cursor, self.enc.dim, batch_table(self.enc, keys, encoded), self.sweep)
            self._written(keys.height)
            return
        if not self.threaded:  # in the encoding thread, when due (the first batch at once)
            self.pending.append((keys, encoded))
            self.size += encoded.vectors.nbytes
            # at most every `every` s, and at least 100 times as long as the last append took
            # (an append to a large store, its checkpoint included, takes ~0.17 s: one in 17 s)
            wait = max(self.every, 100 * self.append_seconds)
            if self.size >= self.most_bytes or time.monotonic() - self.last >= wait:
                self._flush()
            return
        while True:
            if self.error is not None:
                raise self.error
            try:
                self.queue.put((keys, encoded), timeout=0.1)
                return
            except queue.Full:
                continue

    def _run(self):
        # The first batch is appended at once (a reader, or a resume after a kill, finds the
        # encode under way); the rest at most every `every` seconds.
        done, pending, size, last = False, [], 0, float("-inf")
        while not done:
            wait = max(0.0, last + self.every - time.monotonic()) if pending else None
            try:
                item = self.queue.get(timeout=wait) if wait is None or wait > 0 else self.queue.get_nowait()
            except queue.Empty:
                item = False  # time to append what waits
            while item is not False:  # everything else already waiting joins this append
                if item is None:
                    done = True
                    break
                pending.append(item)
                size += item[1].vectors.nbytes
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    item = False
            due = done or size >= self.most_bytes or time.monotonic() - last >= self.every
            if not pending or self.error is not None or not due:
                continue
            batch, pending, size, last = pending, [], 0, time.monotonic()
            try:  # Arrow conversion here too: it overlaps the next forward pass, which releases the GIL
                self._append(batch)
            except BaseException as e:  # surfaces in the encoding thread at its next put/close
                self.error = e
            last = time.monotonic()

    def _append(self, batch: list) -> None:
        """One append of the batches (keys, encoded) to the store, in one transaction."""
        rows = pa.concat_tables([batch_table(self.enc, keys, encoded) for keys, encoded in batch])
        if self.path is None:
            append(self.cursor, self.enc.dim, rows, self.sweep)
        else:
            con = store.connect(self.path, threads=1)
            try:  # between its appends the file is free: another command may have stored these texts
                append(con, self.enc.dim, rows, True)  # meanwhile (the same model: the same vectors)
            finally:
                con.close()
        self._written(sum(keys.height for keys, _ in batch))

    def _flush(self) -> None:
        batch, self.pending, self.size = self.pending, [], 0
        started = time.monotonic()
        if batch:
            self._append(batch)
        self.last = time.monotonic()
        self.append_seconds = self.last - started

    def _written(self, rows: int) -> None:
        self.written += rows
        if self.progress:
            self.progress(self.written, self.total)

    def close(self) -> None:
        if self.inline:
            return
        if not self.threaded:
            try:
                self._flush()
            finally:
                if self.cursor is not None:
                    self.cursor.close()
            return
        self.queue.put(None)
        self.thread.join()
        if self.cursor is not None:
            self.cursor.close()
        if self.error is not None:
            raise self.error


def batches(enc: Encoder, todo: pl.DataFrame, chunk: int):
    """(keys, Encoded) pairs for the missing rows, `chunk` rows handed to the encoder at a time."""
    for start in range(0, todo.height, chunk):
        part = todo.slice(start, chunk)
        spans = list(zip(part["span_start"], part["span_end"])) if enc.uses_span else [None] * part.height
        for rows, encoded in enc.encode_stream(part["text"].to_list(), spans):
            yield part[rows], encoded


def encode_missing(con, enc: Encoder, stimuli: pl.DataFrame, batch_size: int = 4096,
                   progress: Callable[[int, int], None] | None = None, engine: str = "local",
                   workers: int | None = None) -> dict:
    """Encode what is not stored yet, `batch_size` texts handed to the encoder at a time (a
    transformer sorts and re-batches them by length inside). engine="ray" encodes on a Ray
    cluster (stimkit.encoders.ray_engine); the vectors are the same and only this process
    writes to the store. A layer sweep (`layer=all`) stores every layer's vectors, each under
    the fingerprint of its single-layer encoder (`stimkit.encoders.layers(enc)`), from one
    forward pass per batch. Returns counts and timing (`fingerprints`: one per layer stored)."""
    _check_engine(engine, enc)
    _no_scorer(enc)
    register(con, enc)
    items = items_for(enc, stimuli)
    todo = missing(con, enc, items)
    return _encode(enc, items, todo, batch_size, engine, workers, lambda: Writer(con, enc, todo.height, progress))


def encode_missing_released(path, enc: Encoder, stimuli: pl.DataFrame, batch_size: int = 4096,
                            progress: Callable[[int, int], None] | None = None, engine: str = "local",
                            workers: int | None = None) -> dict:
    """encode_missing for a long encode: the store file is open only to find what is missing
    and for each append, so other processes can read it (`stimkit results` works) while the
    model runs. The caller must hold no connection to it."""
    _check_engine(engine, enc)
    _no_scorer(enc)
    con = store.connect(path)
    try:
        register(con, enc)
        items = items_for(enc, stimuli)
        todo = missing(con, enc, items)
    finally:
        con.close()
    return _encode(enc, items, todo, batch_size, engine, workers, lambda: Writer(None, enc, todo.height, progress, path=path))


def _no_scorer(enc: Encoder) -> None:
    """A scoring encoder (a language model, encoders.scoring) gives log-probabilities, no vectors."""
    if getattr(enc, "scores", False):
        raise StimkitError(f"encoder {enc.spec!r} scores texts (a language model): it gives log-probabilities, "
                           "not vectors; a test that reads vectors cannot run on it")


def _check_engine(engine: str, enc: Encoder | None = None) -> None:
    check_choice(engine, ENGINES, "", "engine")
    if engine == "ray" and enc is not None and len(enc.layer_encoders()) > 1:
        raise StimkitError(f"encoder {enc.spec!r}: a layer sweep (layer=all) runs on the local engine")


def _encode(enc: Encoder, items: pl.DataFrame, todo: pl.DataFrame, batch_size: int, engine: str, workers, make_writer) -> dict:
    started = time.perf_counter()
    if todo.height:
        if engine == "ray":
            from . import ray_engine
            produced = ray_engine.batches(enc, todo, batch_size, workers)
        else:
            produced = batches(enc, todo, batch_size)
        writer = make_writer()
        try:
            for keys_, encoded in produced:
                writer.put(keys_, encoded)
        finally:
            writer.close()  # commits every batch encoded so far, interrupted or not
    return {"encoder": enc.spec, "fingerprint": enc.fingerprint,
            "fingerprints": [e.fingerprint for e in enc.layer_encoders()], "wanted": items.height,
            "cached": items.height - todo.height, "encoded": todo.height, "seconds": time.perf_counter() - started}


def load(con, enc: Encoder, stimuli: pl.DataFrame) -> tuple[np.ndarray, list[str | None]]:
    """Vectors for each stimulus row, in order: (float32 matrix with NaN rows where no vector, notes).
    One query and one Arrow transfer, no per-row Python."""
    if len(enc.layer_encoders()) > 1:
        raise StimkitError(f"encoder {enc.spec!r}: a layer sweep has one set of vectors per layer: "
                           "load each of stimkit.encoders.layers(enc)")
    want = keys(enc, stimuli).with_row_index("row")
    con.register("_want", want.to_arrow())
    try:
        result = con.sql(f"""
            SELECT w.row, e.vector, e.note, e.text IS NOT NULL AS found
            FROM _want w LEFT JOIN (SELECT * FROM {vector_table(enc.dim)} WHERE fingerprint = ?) e
              USING (text, span_start, span_end)
            ORDER BY w.row""", params=[enc.fingerprint]).to_arrow_table()
    finally:
        con.unregister("_want")
    if not all(result.column("found").to_pylist()):
        raise StimkitError(f"encoder {enc.spec!r}: some stimuli are not encoded yet (run `stimkit encode`)")
    column = result.column("vector").combine_chunks()
    dim = enc.dim
    if len(column) == 0:
        return np.empty((0, dim), dtype=np.float32), []
    # straight from the Arrow buffers: pyarrow's to_numpy() would import pandas (0.2 s a process)
    flat = column.values
    values = np.frombuffer(flat.buffers()[1], dtype=np.float32, count=flat.offset + len(flat))[flat.offset:]
    matrix = np.array(values[column.offset * dim:(column.offset + len(column)) * dim], dtype=np.float32).reshape(len(column), dim)
    if column.null_count:
        valid = np.unpackbits(np.frombuffer(column.buffers()[0], dtype=np.uint8), bitorder="little")
        matrix[valid[column.offset:column.offset + len(column)] == 0] = np.nan
    return matrix, result.column("note").to_pylist()


def notes(con, enc: Encoder, limit: int = 5) -> list[tuple[str, int]]:
    """The most common notes (out of vocabulary, truncated) on an encoder's stored vectors."""
    return store.rows(con, f"SELECT note, count(*) FROM {vector_table(enc.dim)} WHERE fingerprint = ? AND note IS NOT NULL "
                           f"GROUP BY note ORDER BY 2 DESC LIMIT {int(limit)}", [enc.fingerprint])


def stored(con) -> pl.DataFrame:
    """Every encoder with vectors in the store (and the embedded ones, with none yet)."""
    from . import EMBEDDED

    rows = []
    for fp, spec, dim, table in store.rows(con, "SELECT fingerprint, spec, dim, vector_table FROM encoders ORDER BY created_at"):
        if table == "token_scores":  # a scoring encoder (db/030): its scored texts
            rows.append({"encoder": spec, "fingerprint": fp, "dim": dim, "no_vector": 0, "vectors": store.one(
                con, "SELECT count(DISTINCT text) FROM token_scores WHERE fingerprint = ?", [fp])[0]})
            continue
        n, nulls = store.one(con, f"SELECT count(*), count(*) - count(vector) FROM {table} WHERE fingerprint = ?", [fp])
        rows.append({"encoder": spec, "fingerprint": fp, "dim": dim, "vectors": n, "no_vector": nulls})
    listed = {r["encoder"].split(",")[0] for r in rows}
    rows += [{"encoder": name, "fingerprint": None, "dim": None, "vectors": 0, "no_vector": 0}
             for name in EMBEDDED if name not in listed]
    return pl.DataFrame(rows, schema={"encoder": pl.String, "fingerprint": pl.String, "dim": pl.Int64,
                                      "vectors": pl.Int64, "no_vector": pl.Int64})
