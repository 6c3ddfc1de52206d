"""The encoder protocol: texts (+ optional spans of the word of interest) -> float32 matrix."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from .. import StimkitError

Span = tuple[int, int] | None


@dataclass
class Encoded:
    """One row per text. A row that could not be encoded at all (every word out of
    vocabulary) is NaN and stored as a NULL vector, with its note saying why."""

    vectors: np.ndarray
    oov: list[list[str]] = field(default_factory=list)
    notes: list[str | None] = field(default_factory=list)

    def __post_init__(self):
        n = len(self.vectors)
        self.oov = self.oov or [[] for _ in range(n)]
        self.notes = self.notes or [None] * n


class Encoder:
    """Subclasses set `name`, `dim`, `uses_span`, `options`, and implement `encode` and `identity`."""

    name: str = ""
    dim: int = 0
    uses_span: bool = False  # True when the vector depends on the word's span (token pooling)
    options: dict = {}

    def identity(self) -> dict:
        """What the weights are (path, file sizes/hashes, package versions)."""
        raise NotImplementedError

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        raise NotImplementedError

    def encode_stream(self, texts: list[str], spans: list[Span]) -> Iterator[tuple[np.ndarray, Encoded]]:
        """(row indices into texts, their vectors) in whatever order suits the model; an
        encoder that batches by length yields batch after batch so the store writes meanwhile."""
        yield np.arange(len(texts)), self.encode(texts, spans)

    @property
    def spec(self) -> str:
        opts = "".join(f",{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.name}{opts}"

    def details(self) -> dict:
        return {"name": self.name, "dim": self.dim, "options": self.options, "identity": self.identity()}

    @property
    def fingerprint(self) -> str:
        if getattr(self, "_fingerprint", None) is None:  # hashing weights is not free: once per encoder
            blob = json.dumps(self.details(), sort_keys=True, default=str)
            self._fingerprint = hashlib.sha256(blob.encode()).hexdigest()[:16]
        return self._fingerprint


def file_identity(path, head_bytes: int = 1 << 20) -> dict:
    """A cheap content identity for big weight files: size plus a hash of the first MiB (-1: all).
    Cached per (path, size, mtime): a file that changes is hashed again."""
    st = os.stat(path)
    return dict(_file_identity(os.path.abspath(path), st.st_size, st.st_mtime_ns, head_bytes))


@functools.lru_cache(maxsize=256)
def _file_identity(path: str, size: int, mtime_ns: int, head_bytes: int) -> tuple:
    with open(path, "rb") as f:
        head = hashlib.sha256(f.read(head_bytes)).hexdigest()[:16]
    return (("file", os.path.basename(path)), ("size", size), ("head_sha256", head))


def positive_int(value, key: str, where: str) -> int:
    """An option value that must be a whole number >= 1, else a one-line error naming it."""
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number < 1:
        raise StimkitError(f"encoder {where!r}: {key} must be a whole number >= 1, not {value!r}")
    return number


def nan_rows(n: int, dim: int) -> np.ndarray:
    return np.full((n, dim), np.nan, dtype=np.float32)
