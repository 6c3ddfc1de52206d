"""Precomputed vectors from any external encoder: a parquet or CSV file of (text, vector).

parquet: a `text` column and a list column `vector`.
csv:     a `text` column and either a `vector` column ("[0.1, 0.2, ...]" or space-separated)
         or one numeric column per dimension.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from .. import StimkitError
from .base import Encoded, Encoder, Span, file_identity, nan_rows


def read_vectors(path: Path, dim: int | None = None) -> tuple[list[str], np.ndarray]:
    """(texts, float32 matrix) from the file, every row checked before anything is used: a
    one-line error naming the file and row (CSV rows count from 2, after the header)."""
    where = f"encoder 'import:{path}'"
    if not path.is_file():
        raise StimkitError(f"{where}: no such file")
    try:
        df = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path, infer_schema_length=None)
    except Exception as e:  # noqa: BLE001 -- polars and pyarrow raise many kinds for a bad file
        raise StimkitError(f"{where}: cannot read: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if "text" not in df.columns:
        raise StimkitError(f"{where}: needs a `text` column (has: {', '.join(df.columns) or 'no columns'})")
    if df.height == 0:
        raise StimkitError(f"{where}: no rows (a header alone is not vectors)")
    if df["text"].dtype != pl.String:
        raise StimkitError(f"{where}: the `text` column must hold strings, not {df['text'].dtype}")
    texts = df["text"].to_list()
    blank = next((i for i, t in enumerate(texts) if t is None or not t.strip()), None)
    if blank is not None:
        raise StimkitError(f"{where}: row {blank + 2}: empty text")
    if "vector" in df.columns:
        matrix = _vector_column(df["vector"], texts, where)
    else:
        others = [c for c in df.columns if c != "text"]
        if not others:
            raise StimkitError(f"{where}: no vector: give a `vector` column or one numeric column per dimension")
        wrong = next((c for c in others if not df[c].dtype.is_numeric()), None)
        if wrong is not None:
            raise StimkitError(f"{where}: column {wrong!r} is {df[wrong].dtype}, not numbers (one numeric column per dimension)")
        nulls = next((c for c in others if df[c].null_count()), None)
        if nulls is not None:
            i = df[nulls].is_null().arg_true()[0]
            raise StimkitError(f"{where}: row {i + 2} ({texts[i]!r}) has no value in column {nulls!r}")
        matrix = df.select(others).to_numpy().astype(np.float32)
    if dim is not None and matrix.shape[1] != dim:
        raise StimkitError(f"{where}: vectors have dimension {matrix.shape[1]}, expected {dim}")
    with np.errstate(over="ignore"):
        nan_rows_ = np.where(~np.isfinite(matrix).all(axis=1))[0]
    if len(nan_rows_):
        i = int(nan_rows_[0])
        raise StimkitError(f"{where}: row {i + 2} ({texts[i]!r}) has NaN or infinite values (or values beyond float32)")
    seen = {}
    for i, t in enumerate(texts):
        if t in seen:
            raise StimkitError(f"{where}: duplicate text {t!r} (rows {seen[t] + 2} and {i + 2})")
        seen[t] = i
    return texts, matrix


def _vector_column(col: pl.Series, texts: list[str], where: str) -> np.ndarray:
    """The `vector` column as a matrix: a string per row ("[0.1, 0.2]" or "0.1 0.2") or a list of numbers."""
    if col.dtype == pl.String:
        rows = []
        for i, v in enumerate(col):
            try:
                rows.append([float(x) for x in (json.loads(v) if v.strip().startswith("[") else v.split())])
            except (ValueError, TypeError, AttributeError):
                raise StimkitError(f"{where}: row {i + 2} ({texts[i]!r}): the vector is not a list of numbers: {str(v)[:40]!r}") from None
    elif isinstance(col.dtype, (pl.List, pl.Array)) and col.dtype.inner.is_numeric():
        rows = col.to_list()
    else:
        raise StimkitError(f"{where}: the `vector` column is {col.dtype}, not a list of numbers")
    missing = next((i for i, r in enumerate(rows) if r is None or any(x is None for x in r)), None)
    if missing is not None:
        raise StimkitError(f"{where}: row {missing + 2} ({texts[missing]!r}) has a missing vector or value")
    if not rows[0]:
        raise StimkitError(f"{where}: row 2 ({texts[0]!r}) has an empty vector")
    bad = next((i for i, r in enumerate(rows) if len(r) != len(rows[0])), None)
    if bad is not None:
        raise StimkitError(f"{where}: row {bad + 2} ({texts[bad]!r}) has {len(rows[bad])} values, row 2 has {len(rows[0])}")
    return np.asarray(rows, dtype=np.float32)


class ImportedEncoder(Encoder):
    def __init__(self, path: str, dim: str | int | None = None):
        self.path = Path(path).expanduser()
        self.name = f"import:{self.path}"
        self.options = {}
        texts, self.matrix = read_vectors(self.path, int(dim) if dim else None)
        self.index = {t: i for i, t in enumerate(texts)}
        self.dim = self.matrix.shape[1]

    def identity(self) -> dict:
        return file_identity(self.path)

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        out = nan_rows(len(texts), self.dim)
        notes = []
        for i, t in enumerate(texts):
            j = self.index.get(t)
            if j is None:
                notes.append(f"not in {self.path.name}")
            else:
                out[i] = self.matrix[j]
                notes.append(None)
        return Encoded(out, notes=notes)
