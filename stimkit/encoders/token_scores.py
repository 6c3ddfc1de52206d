"""The token table: a scoring encoder's per-token log-probabilities in the store (db/030).

Keyed by encoder fingerprint and text, never by test, as vectors are (encoders.embeddings):
only texts without stored rows are scored, a text's rows are written whole in one
transaction, and a command's new rows are noted as pending (store.journal) so that a command
that fails or is killed leaves none of them.
"""

from __future__ import annotations

import json
import time
from typing import Callable

import numpy as np
import polars as pl

from .. import StimkitError, store
from .scoring import ScoringEncoder, TokenScores

TABLE = "token_scores"
SCHEMA = {"fingerprint": pl.String, "text": pl.String, "position": pl.Int32, "token_id": pl.Int64,
          "token": pl.String, "logprob": pl.Float64, "masked": pl.Boolean}


def register(con, enc: ScoringEncoder) -> str:
    """Record the scoring encoder in `encoders` (dim 0, its rows in token_scores)."""
    fp = enc.fingerprint
    with store.transaction(con):
        if not store.one(con, "SELECT 1 FROM encoders WHERE fingerprint = ?", [fp]):
            con.execute(
                "INSERT INTO encoders (fingerprint, spec, name, dim, uses_span, vector_table, details) "
                "VALUES (?, ?, ?, 0, false, ?, ?)",
                [fp, enc.spec, enc.name, TABLE, json.dumps(enc.details(), default=str)])
    return fp


def distinct_texts(texts) -> list[str]:
    """The texts in first-seen order, once each; an empty one refused (nothing to score)."""
    out = list(dict.fromkeys(str(t) for t in texts))
    for t in out:
        if not t.strip():
            raise StimkitError("empty text: nothing to score")
    return out


def missing(con, enc: ScoringEncoder, texts: list[str]) -> list[str]:
    """The texts with no stored rows under the encoder's fingerprint, in the given order."""
    absent = set(_unscored(con, enc.fingerprint, texts)) if texts else set()
    return [t for t in texts if t in absent]


def rows_of(fingerprint: str, texts: list[str], scored: list[TokenScores]) -> pl.DataFrame:
    """The token_scores rows of scored texts."""
    counts = [len(s) for s in scored]
    if not sum(counts):
        return pl.DataFrame(schema=SCHEMA)
    return pl.DataFrame({
        "fingerprint": pl.repeat(fingerprint, sum(counts), dtype=pl.String, eager=True),
        "text": pl.Series([t for t, n in zip(texts, counts) for _ in range(n)], dtype=pl.String),
        "position": pl.Series(np.concatenate([s.position for s in scored]), dtype=pl.Int32),
        "token_id": pl.Series(np.concatenate([s.token_ids for s in scored]), dtype=pl.Int64),
        "token": pl.Series([w for s in scored for w in s.tokens], dtype=pl.String),
        "logprob": pl.Series(np.concatenate([s.logprobs for s in scored]), dtype=pl.Float64),
        "masked": pl.Series(np.concatenate([s.masked for s in scored]), dtype=pl.Boolean),
    }, schema=SCHEMA)


def _append(con, enc: ScoringEncoder, rows: pl.DataFrame) -> None:
    """The rows and the encoder's record in one transaction (a text's rows together: all or
    nothing; an encoder whose model fails to load or refuses a text is never recorded)."""
    with store.transaction(con):
        register(con, enc)
        store.insert(con, TABLE, rows, keep_stored=True)


def score_missing(con, enc: ScoringEncoder, texts, on_progress: Callable[[int, int], None] | None = None,
                  path=None, every: float = 5.0) -> dict:
    """Score the texts not stored yet for this encoder and store their rows; registers the
    encoder. With `path` instead of a connection (con None), the store is opened only to find
    what is missing and for each append (at most every `every` seconds), so other processes
    can read it while the model runs. Every text is checked against the model's context before
    any is scored. Returns counts and timing, as an encode's report."""
    started = time.perf_counter()
    wanted = distinct_texts(texts)
    own = con is None
    con = store.connect(path) if own else con
    try:
        todo = missing(con, enc, wanted)
    finally:
        if own:
            con.close()
    tokens = 0
    if todo:
        done, pending, last = 0, [], time.monotonic()
        if on_progress:
            on_progress(0, len(todo))

        def flush():
            nonlocal pending
            if not pending:
                return
            rows = pl.concat(pending)
            pending = []
            if own:
                c = store.connect(path, threads=1)
                try:
                    _append(c, enc, rows)
                finally:
                    c.close()
            else:
                _append(con, enc, rows)

        try:
            for index, scored in enc.score_stream(todo):
                batch_texts = [todo[i] for i in index]
                pending.append(rows_of(enc.fingerprint, batch_texts, scored))
                tokens += sum(int((~s.masked).sum()) or len(s) for s in scored)
                done += len(index)
                if time.monotonic() - last >= every or not own:
                    flush()
                    last = time.monotonic()
                if on_progress:
                    on_progress(done, len(todo))
        finally:
            flush()  # what was scored is kept, interrupted or not (a text's rows are whole)
    return {"encoder": enc.spec, "fingerprint": enc.fingerprint, "fingerprints": [enc.fingerprint],
            "wanted": len(wanted), "cached": len(wanted) - len(todo), "encoded": len(todo),
            "seconds": time.perf_counter() - started}


def load(con, fingerprint: str, texts) -> list[TokenScores]:
    """Each text's stored scores, in the given order (one query); a text not scored refused."""
    texts = [str(t) for t in texts]
    con.register("_want_texts", pl.DataFrame({"text": list(dict.fromkeys(texts))}).to_arrow())
    try:
        frame = store.frame(con, f"""
            SELECT t.text, t.position, t.token_id, t.token, t.logprob, t.masked
            FROM {TABLE} t SEMI JOIN _want_texts w USING (text)
            WHERE t.fingerprint = ?
            ORDER BY t.text, t.masked DESC, t.position""", [fingerprint])
    finally:
        con.unregister("_want_texts")
    found = {}
    for (text,), part in frame.group_by(["text"], maintain_order=True):
        found[text] = TokenScores(token_ids=part["token_id"].to_numpy().astype(np.int64),
                                  tokens=part["token"].to_list(),
                                  logprobs=part["logprob"].to_numpy().astype(np.float64),
                                  masked=part["masked"].to_numpy().astype(bool),
                                  position=part["position"].to_numpy().astype(np.int64))
    absent = [t for t in texts if t not in found]
    if absent:
        raise StimkitError(f"encoder {fingerprint}: {len(absent)} text(s) not scored yet, e.g. {absent[0][:60]!r} "
                           "(run `stimkit encode`)")
    return [found[t] for t in texts]


def totals(con, fingerprint: str, texts, variant: str = "sum", folders=()) -> np.ndarray:
    """One score a text under a text variant (encoders.likelihood: sum, mean, pll, aul or a
    study's own), NaN where it gives none; a text not scored yet refused."""
    from .likelihood import text_scores

    texts = [str(t) for t in texts]
    if missing_texts := _unscored(con, fingerprint, texts):
        raise StimkitError(f"encoder {fingerprint}: {len(missing_texts)} text(s) not scored yet, e.g. "
                           f"{missing_texts[0][:60]!r} (run `stimkit encode`)")
    return text_scores(con, fingerprint, texts, variant, folders)


def _unscored(con, fingerprint: str, texts: list[str]) -> list[str]:
    con.register("_wanted_texts", pl.DataFrame({"text": list(dict.fromkeys(texts))}, schema={"text": pl.String}).to_arrow())
    try:
        return store.frame(con, f"SELECT w.text FROM _wanted_texts w ANTI JOIN (SELECT DISTINCT text FROM {TABLE} "
                                "WHERE fingerprint = ?) t USING (text)", [fingerprint])["text"].to_list()
    finally:
        con.unregister("_wanted_texts")


def stored_texts(con, fingerprint: str) -> int:
    return store.one(con, f"SELECT count(DISTINCT text) FROM {TABLE} WHERE fingerprint = ?", [fingerprint])[0]
