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
    where = f"encoder 'import:{path}'"
    if not path.is_file():
        raise StimkitError(f"{where}: no such file")
    try:
        df = pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)
    except Exception as e:
        raise StimkitError(f"{where}: cannot read: {str(e).splitlines()[0]}") from None
    if "text" not in df.columns:
        raise StimkitError(f"{where}: needs a `text` column (has: {', '.join(df.columns)})")
    if "vector" in df.columns:
        col = df["vector"]
        if col.dtype == pl.String:
            rows = []
            for i, v in enumerate(col):
                try:
                    rows.append([float(x) for x in (json.loads(v) if v.strip().startswith("[") else v.split())])
                except (ValueError, TypeError, AttributeError):
                    raise StimkitError(f"{where}: row {i + 2} ({df['text'][i]!r}): the vector is not a list of numbers: {str(v)[:40]!r}") from None
        else:
            rows = col.to_list()
        lengths = {len(r) if r is not None else 0 for r in rows}
        if len(lengths) != 1:
            bad = next(i for i, r in enumerate(rows) if len(r or []) != len(rows[0] or []))
            raise StimkitError(f"{where}: row {bad + 2} ({df['text'][bad]!r}) has {len(rows[bad] or [])} values, row 2 has {len(rows[0] or [])}")
        matrix = np.asarray(rows, dtype=np.float32)
    else:
        others = [c for c in df.columns if c != "text"]
        matrix = df.select(others).to_numpy().astype(np.float32)
    texts = df["text"].to_list()
    if dim is not None and matrix.shape[1] != dim:
        raise StimkitError(f"{where}: vectors have dimension {matrix.shape[1]}, expected {dim}")
    nan_rows_ = np.where(~np.isfinite(matrix).all(axis=1))[0]
    if len(nan_rows_):
        i = int(nan_rows_[0])
        raise StimkitError(f"{where}: row {i + 2} ({texts[i]!r}) has NaN or infinite values")
    seen = {}
    for i, t in enumerate(texts):
        if t in seen:
            raise StimkitError(f"{where}: duplicate text {t!r} (rows {seen[t] + 2} and {i + 2})")
        seen[t] = i
    return texts, matrix


class ImportedEncoder(Encoder):
    def __init__(self, path: str, dim: str | int | None = None):
        self.path = Path(path).expanduser()
        self.name = f"import:{self.path}"
        self.options = {}
        texts, self.matrix = read_vectors(self.path, int(dim) if dim else None)
        self.index = {t: i for i, t in enumerate(texts)}
        self.dim = self.matrix.shape[1]

    def identity(self) -> dict:
        return file_identity(self.path, head_bytes=-1)  # the whole file: imports are small

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
