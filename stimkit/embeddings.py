"""The embedding store: vectors keyed by encoder fingerprint and content, never by test.

Encoding is resumable: only (text, span) pairs without a stored vector are encoded,
in batches, each committed on its own, so a killed run keeps what it finished.
"""

from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np
import polars as pl
import pyarrow as pa

from . import StimkitError, store
from .encoders import Encoder

NO_SPAN = -1


def vector_table(dim: int) -> str:
    return f"embeddings_{int(dim)}"


def register(con, enc: Encoder) -> str:
    """Record the encoder and make sure its vector table exists; returns the fingerprint."""
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
    table, fp = vector_table(enc.dim), enc.fingerprint
    con.register("_wanted", items.to_arrow())
    try:
        return store.frame(con, f"""
            SELECT w.* FROM _wanted w
            ANTI JOIN (SELECT text, span_start, span_end FROM {table} WHERE fingerprint = ?) e
              USING (text, span_start, span_end)""", [fp])
    finally:
        con.unregister("_wanted")


def _arrow_vectors(vectors: np.ndarray) -> pa.Array:
    dim = vectors.shape[1]
    null = ~np.isfinite(vectors).all(axis=1)
    values = pa.array(np.nan_to_num(vectors, nan=0.0).astype(np.float32).ravel())
    return pa.FixedSizeListArray.from_arrays(values, dim, mask=pa.array(null))


def write_batch(con, enc: Encoder, batch: pl.DataFrame, encoded) -> None:
    if encoded.vectors.shape != (batch.height, enc.dim):
        raise StimkitError(f"encoder {enc.spec!r} returned shape {encoded.vectors.shape}, expected {(batch.height, enc.dim)}")
    table = pa.table({
        "fingerprint": [enc.fingerprint] * batch.height,
        "text": batch["text"].to_arrow(),
        "span_start": batch["span_start"].to_arrow(),
        "span_end": batch["span_end"].to_arrow(),
        "vector": _arrow_vectors(encoded.vectors),
        "oov": pa.array(encoded.oov, type=pa.list_(pa.string())),
        "note": pa.array(encoded.notes, type=pa.string()),
    })
    con.register("_batch", table)
    try:
        with store.transaction(con):
            con.execute(f"INSERT INTO {vector_table(enc.dim)} (fingerprint, text, span_start, span_end, vector, oov, note) "
                        "SELECT fingerprint, text, span_start, span_end, vector, oov, note FROM _batch")
    finally:
        con.unregister("_batch")


def encode_missing(con, enc: Encoder, stimuli: pl.DataFrame, batch_size: int = 256,
                   progress: Callable[[int, int], None] | None = None) -> dict:
    """Encode what is not stored yet. Returns counts and timing."""
    register(con, enc)
    items = items_for(enc, stimuli)
    todo = missing(con, enc, items)
    started = time.perf_counter()
    done = 0
    for start in range(0, todo.height, batch_size):
        batch = todo.slice(start, batch_size)
        spans = list(zip(batch["span_start"], batch["span_end"])) if enc.uses_span else [None] * batch.height
        encoded = enc.encode(batch["text"].to_list(), spans)
        write_batch(con, enc, batch, encoded)
        done += batch.height
        if progress:
            progress(done, todo.height)
    return {"encoder": enc.spec, "fingerprint": enc.fingerprint, "wanted": items.height,
            "cached": items.height - todo.height, "encoded": done, "seconds": time.perf_counter() - started}


def load(con, enc: Encoder, stimuli: pl.DataFrame) -> tuple[np.ndarray, list[str | None]]:
    """Vectors for each stimulus row, in order: (float32 matrix with NaN rows where no vector, notes).
    One query and one Arrow transfer, no per-row Python."""
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
    values = column.values.to_numpy(zero_copy_only=False)[column.offset * dim:(column.offset + len(column)) * dim]
    matrix = np.array(values, dtype=np.float32).reshape(len(column), dim)
    matrix[column.is_null().to_numpy(zero_copy_only=False)] = np.nan
    return matrix, result.column("note").to_pylist()
