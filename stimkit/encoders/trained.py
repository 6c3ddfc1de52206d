"""Encoders trained on a corpus (`stimkit train`, catalog.training): `trained:NAME/seed-K` and
`trained:NAME/boot-K`, word vectors that live in the store (db/033: trained_models and
trained_vectors), so such an encoder resolves only with the store's connection
(encoders.resolve(spec, con)).

A replicate is a WordVectorEncoder over its stored vectors: the same tokeniser (lower-cased:
training lower-cased the text), the same out-of-vocabulary notes, a multi-word entry the mean
of its tokens (CBoW), `pooling=token` for the word inside a sentence, `lang=` to declare its
language (a trained model reads any language unless declared). Its vectors are read from the
store when it is resolved (while the store is open; an encode releases it afterwards) and held
in memory: vocabulary x dim x 4 bytes a replicate (a 10,000-word, 100-dim model: 4 MB).

Its fingerprint is the replicate's (catalog.training.fingerprint: corpus content, method,
hyper-parameters, seed, resample) when it pools by CBoW, so results name the model itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .. import StimkitError, store
from .wordvectors import WordVectorEncoder, WordVectors

PREFIX = "trained:"
REPLICATE = re.compile(r"(seed|boot)-(0|[1-9][0-9]{0,5})")


class TrainedEncoder(WordVectorEncoder):
    def __init__(self, family: str, replicate: str, model_fingerprint: str, words: list[str], vectors: np.ndarray,
                 pooling: str = "cbow"):
        loaded = WordVectors(list(words), np.ascontiguousarray(vectors, dtype=np.float32))
        super().__init__(f"{PREFIX}{family}/{replicate}", lambda: loaded, {"trained": model_fingerprint}, pooling,
                         int(vectors.shape[1]))
        self._vectors = loaded   # held by the encoder, not in wordvectors' per-process cache
        self.family, self.replicate, self.model_fingerprint = family, replicate, model_fingerprint

    def content(self) -> dict:
        return {"trained": self.model_fingerprint, "options": self.options}

    @property
    def fingerprint(self) -> str:
        return self.model_fingerprint if not self.options else super().fingerprint


@dataclass(frozen=True)
class Member:
    """A replicate of a trained family, as the store holds it."""
    spec: str
    name: str
    replicate: str
    kind: str                    # seed | boot
    k: int
    fingerprint: str
    seed: int
    resample: int | None
    vocab_size: int
    dim: int


def members(con, name: str) -> list[Member]:
    """The family's replicates: seeds by K, then bootstrap samples by K."""
    rows = store.rows(con, """SELECT name, replicate, kind, k, fingerprint, seed, resample, vocab_size, dim
                              FROM trained_models WHERE name = ?
                              ORDER BY kind = 'boot', k""", [name])
    return [Member(f"{PREFIX}{r[0]}/{r[1]}", *r) for r in rows]


def family(con, name: str) -> list[str]:
    """The replicate specs of the family NAME (`trained:NAME/seed-K` then `trained:NAME/boot-K`);
    an unknown family is refused in one line."""
    found = members(con, name)
    if not found:
        raise StimkitError(f"encoder '{PREFIX}{name}': no trained family {name!r} in this store ({_known(con)})")
    return [m.spec for m in found]


def _known(con) -> str:
    names = [n for (n,) in store.rows(con, "SELECT name FROM trained_families ORDER BY name")]
    return "trained: " + ", ".join(names[:10]) if names else "none trained: stimkit train FILES --name NAME"


def trained(con, rest: str, pooling: str = "cbow") -> TrainedEncoder:
    """`trained:NAME/seed-K` (or boot-K) built from the store behind `con`."""
    spec = f"{PREFIX}{rest}"
    name, slash, replicate = rest.rpartition("/")
    if not slash:
        raise StimkitError(f"encoder {spec!r} names a family: name one replicate ({spec}/seed-0, {spec}/boot-0), "
                           f"or run the family with -e {spec}")
    if not REPLICATE.fullmatch(replicate):
        raise StimkitError(f"encoder {spec!r}: a replicate is seed-K or boot-K, not {replicate!r}")
    if con is None:
        raise StimkitError(f"encoder {spec!r} reads its vectors from the store it was trained into: "
                           "resolve it with the store's connection")
    row = store.one(con, "SELECT fingerprint FROM trained_models WHERE name = ? AND replicate = ?",
                    [name, replicate])
    if row is None:
        have = [m.replicate for m in members(con, name)]
        detail = (f"family {name!r} has {', '.join(have[:6])}{', ...' if len(have) > 6 else ''}" if have
                  else _known(con))
        raise StimkitError(f"encoder {spec!r}: not trained in this store ({detail})")
    fp = row[0]
    words, vectors = load(con, fp)
    return TrainedEncoder(name, replicate, fp, words, vectors, pooling)


def load(con, fingerprint: str) -> tuple[list[str], np.ndarray]:
    """A replicate's words and float32 vectors, in vocabulary order (one Arrow transfer)."""
    table = con.sql("SELECT word, vector FROM trained_vectors WHERE fingerprint = ? ORDER BY ordinal",
                    params=[fingerprint]).to_arrow_table()
    column = table.column("vector").combine_chunks()
    n = len(column)
    flat = column.values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return table.column("word").to_pylist(), flat.reshape(n, len(flat) // max(n, 1))
