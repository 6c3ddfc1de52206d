"""The encoder protocol: texts (+ optional spans of the word of interest) -> float32 matrix."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
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
    # The languages the encoder reads (primary subtags): None for any (multilingual, or not
    # declared). A test in another language is refused on it (run.plan); `lang=` declares them.
    languages: frozenset[str] | None = None

    def identity(self) -> dict:
        """What the weights are (path, file sizes/hashes, package versions)."""
        raise NotImplementedError

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        raise NotImplementedError

    def inputs(self, texts: list[str], spans: list[Span]) -> list | None:
        """What the model reads of each text, as comparable values (token ids; with the span's
        tokens where the vector depends on them): two texts with equal inputs get one vector. None
        where the encoder cannot say; a wording audit then compares the vectors exactly."""
        return None

    def encode_stream(self, texts: list[str], spans: list[Span]) -> Iterator[tuple[np.ndarray, Encoded]]:
        """(row indices into texts, their vectors) in whatever order suits the model; an
        encoder that batches by length yields batch after batch so the store writes meanwhile."""
        yield np.arange(len(texts)), self.encode(texts, spans)

    @property
    def spec(self) -> str:
        opts = "".join(f",{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.name}{opts}"

    @property
    def display(self) -> str:
        """The name tables and figures show: the user's `NAME=` if given, else the spec. Never
        part of the fingerprint."""
        return getattr(self, "_display", None) or self.spec

    @display.setter
    def display(self, value: str | None) -> None:
        self._display = value

    def details(self) -> dict:
        """What the store records about the encoder (shown to people: names, paths, identity)."""
        return {"name": self.name, "dim": self.dim, "options": self.options, "identity": self.identity()}

    def content(self) -> dict:
        """What the fingerprint is made of: what decides the vectors. By default the details;
        a model encoder gives its files' content and the options that change vectors instead,
        so that two spellings of one model (`minilm`, `hf:<its folder>`) are one encoder."""
        return self.details()

    @property
    def fingerprint(self) -> str:
        if getattr(self, "_fingerprint", None) is None:  # hashing weights is not free: once per encoder
            blob = json.dumps(self.content(), sort_keys=True, default=str)
            self._fingerprint = hashlib.sha256(blob.encode()).hexdigest()[:16]
        return self._fingerprint

    def layer_encoders(self) -> list["Encoder"]:
        """The encoders whose vectors one encode stores: itself, or one per layer for a layer sweep."""
        return [self]

    # A static encoder (word vectors) has a vocabulary: a word is in it or not, whole.
    static: bool = False

    def subword_counts(self, words: list[str]) -> np.ndarray | None:
        """How many pieces the encoder's tokenizer cuts each word into (0: a static vocabulary
        does not hold it); None when the encoder exposes no tokenizer. Loads the tokenizer
        (or vocabulary) only, never the model."""
        return None


class EncoderWarning(UserWarning):
    """Something about an encoder a user should know, that does not stop it (one line)."""


def cache_dir() -> Path:
    return Path(os.environ.get("STIMKIT_CACHE", Path.home() / ".cache" / "stimkit"))


def file_identity(path) -> dict:
    """The file's name, size and the SHA-256 of its whole content: content decides, so an
    edit that keeps size and modification time still makes another identity."""
    path = os.path.abspath(path)
    return {"file": os.path.basename(path), "size": os.stat(path).st_size, "sha256": content_hash(path)}


def content_hash(path) -> str:
    """The SHA-256 of a file's whole content. A file in the Hugging Face hub cache is a link to
    a blob named by its hash: that name is used. Otherwise the hash is computed once per file
    state and remembered (in this process and in the cache folder) under (path, size,
    mtime_ns, ctime_ns, inode, device): any write to the file changes its ctime, which no user
    tool can set back, so the shortcut cannot be fooled by an edit that restores size and mtime."""
    real = os.path.realpath(path)
    blob = os.path.basename(real)
    if os.sep + "blobs" + os.sep in real and len(blob) in (40, 64) and all(c in "0123456789abcdef" for c in blob):
        return blob  # content-addressed already (sha256 of LFS files, git sha1 of small ones)
    st = os.stat(real)
    return _content_hash((real, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev))


@functools.lru_cache(maxsize=1024)
def _content_hash(key: tuple) -> str:
    remembered = cache_dir() / "file-hashes" / hashlib.sha256(repr(key).encode()).hexdigest()
    try:
        return remembered.read_text().strip()
    except OSError:
        pass
    h = hashlib.sha256()
    with open(key[0], "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    digest = h.hexdigest()
    if os.stat(key[0]).st_ctime_ns == key[3]:  # unchanged while we read: worth remembering
        try:  # written whole then renamed: a reader never sees half a hash
            remembered.parent.mkdir(parents=True, exist_ok=True)
            tmp = remembered.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(digest)
            os.replace(tmp, remembered)
        except OSError:
            pass  # a read-only cache folder only costs the hash next time
    return digest


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
