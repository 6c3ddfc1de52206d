"""Scoring variants: named SQL over the token table (db/030), and the pair alignment they read.

A variant is a file queries/likelihood/NAME.sql (built in), or one in a study's own
queries/likelihood/ folder. Its header says what it is:

    -- kind: text | pair
    -- matches: <the published tool it reproduces>

It reads two relations stimkit defines around it, for one scoring encoder:

    scores(text, position, token_id, token, logprob, masked)   that encoder's token_scores rows
    pairs(pair_id, side, text, position, shared)               its pair_tokens rows (pair variants)

and returns, for kind text, (text, score[, n]) one row a text; for kind pair, (pair_id, side,
text, score[, n]) one row a side of a pair. A text or side with no row has no score under the
variant (pll on a causal LM; biasbench for a side with no differing token).

Pairs: `store_pairs` aligns the two sentences' token ids as Nangia et al.'s metric.py does
(`align`, its get_span) and stores which of each side's positions the other side shares.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from .. import StimkitError, store
from ..paths import data_dir
from .scoring import ScoringEncoder

KINDS = ("text", "pair")
_HEADER = re.compile(r"^--\s*(kind|matches):\s*(.*?)\s*$", re.M)
_NAME = re.compile(r"[a-z][a-z0-9_-]*")


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str      # text: one score a text; pair: one score a side of a pair
    matches: str   # the published tool it reproduces (its header's `matches:` line)
    sql: str
    path: Path


def align(ids_a, ids_b) -> tuple[list[int], list[int]]:
    """The positions of a and of b in the blocks the two sequences share, as Nangia et al.'s
    metric.py finds them (get_span): difflib.SequenceMatcher over the ids as strings, the
    `equal` opcodes' ranges, in order. The two lists have one length: shared_a[i] and
    shared_b[i] are the same token."""
    a = [str(int(x)) for x in ids_a]
    b = [str(int(x)) for x in ids_b]
    shared_a, shared_b = [], []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if op == "equal":
            shared_a.extend(range(a0, a1))
            shared_b.extend(range(b0, b1))
    return shared_a, shared_b


def pair_key(text_a: str, text_b: str) -> str:
    """A pair's id: the hash of its two sentences in order (the same pair, the same id)."""
    return hashlib.sha256(f"{text_a}\x00{text_b}".encode()).hexdigest()[:16]


def shared_flags(enc: ScoringEncoder, text_a: str, text_b: str) -> tuple[np.ndarray, np.ndarray]:
    """For each token of each sentence (its own tokens, the positions of its scores), whether
    the other sentence shares it. The ids aligned are those the model reads: a masked LM's with
    [CLS] and [SEP], of which metric.py leaves out the first and the last shared position
    (range(1, N - 1)); a causal LM's after its prefix token, all shared positions kept."""
    ids_a, ids_b = enc.token_ids([text_a, text_b])
    (full_a, start_a), (full_b, start_b) = enc.input_ids(text_a, ids_a), enc.input_ids(text_b, ids_b)
    shared_a, shared_b = align(full_a, full_b)
    if enc.score_kind == "pll":
        shared_a, shared_b = shared_a[1:-1], shared_b[1:-1]
    flags = []
    for ids, start, shared in ((ids_a, start_a, shared_a), (ids_b, start_b, shared_b)):
        mine = np.zeros(len(ids), dtype=bool)
        at = np.asarray([p - start for p in shared if 0 <= p - start < len(ids)], dtype=np.int64)
        mine[at] = True
        flags.append(mine)
    return flags[0], flags[1]


def store_pairs(con, enc: ScoringEncoder, pairs) -> list[str]:
    """Align each (text_a, text_b) pair under the encoder's tokenizer and store its flags in
    pair_tokens (side 0: text_a, side 1: text_b), one transaction; a pair stored already is
    kept. Returns the pair ids (pair_key), in order."""
    pairs = [(str(a), str(b)) for a, b in pairs]
    ids = [pair_key(a, b) for a, b in pairs]
    fp = enc.fingerprint
    stored = set()
    if ids:
        con.register("_pair_ids", pl.DataFrame({"pair_id": ids}).to_arrow())
        try:
            stored = {r[0] for r in store.rows(con, "SELECT DISTINCT pair_id FROM pair_tokens WHERE fingerprint = ? "
                                                    "AND pair_id IN (SELECT pair_id FROM _pair_ids)", [fp])}
        finally:
            con.unregister("_pair_ids")
    frames = []
    for pid, (a, b) in dict(zip(ids, pairs)).items():
        if pid in stored:
            continue
        for side, (text, flags) in enumerate(zip((a, b), shared_flags(enc, a, b))):
            frames.append(pl.DataFrame({"fingerprint": fp, "pair_id": pid, "side": side, "text": text,
                                        "position": np.arange(len(flags), dtype=np.int32), "shared": flags},
                                       schema={"fingerprint": pl.String, "pair_id": pl.String, "side": pl.Int32,
                                               "text": pl.String, "position": pl.Int32, "shared": pl.Boolean}))
    if frames:
        with store.transaction(con):
            store.insert(con, "pair_tokens", pl.concat(frames), keep_stored=True)
    return ids


def variants(folders=()) -> dict[str, Variant]:
    """The scoring variants: the built-ins (queries/likelihood/*.sql), then each folder's
    *.sql (a study's own queries/likelihood/). A name given twice, a header without its kind,
    or a file that is not one SELECT is refused in one line naming the file."""
    from ..store.usersql import check_select

    found: dict[str, Variant] = {}
    for folder in [data_dir("queries") / "likelihood", *map(Path, folders)]:
        for path in sorted(folder.glob("*.sql")) if folder.is_dir() else []:
            name = path.stem
            if not _NAME.fullmatch(name):
                raise StimkitError(f"{path}: a variant's name is lower-case letters, digits, - and _ ({name!r})")
            if name in found:
                raise StimkitError(f"{path}: variant {name!r} is defined already by {found[name].path}")
            text = path.read_text(encoding="utf-8")
            header = dict((k, v) for k, v in _HEADER.findall(text))
            if header.get("kind") not in KINDS:
                raise StimkitError(f"{path}: the header must say `-- kind: text` or `-- kind: pair`")
            sql = check_select(text, str(path))
            found[name] = Variant(name, header["kind"], header.get("matches", ""), sql, path)
    return found


def study_folders(study) -> list[Path]:
    """A study's own variants: the folder queries/likelihood/ beside its study file, if any."""
    path = getattr(study, "path", None)
    folder = Path(path).parent / "queries" / "likelihood" if path else None
    return [folder] if folder is not None and folder.is_dir() else []


def variant(name: str, folders=()) -> Variant:
    known = variants(folders)
    if name not in known:
        from ..choices import suggest

        raise StimkitError(f"unknown scoring variant {name!r}{suggest(name, list(known))} (known: {', '.join(known)})")
    return known[name]


def _run(con, var: Variant, fingerprint: str, texts: list[str] | None = None, pair_ids: list[str] | None = None):
    """The variant's rows for one encoder, over the given texts or pairs."""
    wanted_pairs = pair_ids is not None
    if wanted_pairs:
        con.register("_want_pairs", pl.DataFrame({"pair_id": list(pair_ids)}, schema={"pair_id": pl.String}).to_arrow())
    con.register("_want_texts", pl.DataFrame({"text": list(texts or [])}, schema={"text": pl.String}).to_arrow())
    pairs_where = "AND pair_id IN (SELECT pair_id FROM _want_pairs)" if wanted_pairs else "AND false"
    texts_where = ("text IN (SELECT text FROM pair_tokens WHERE fingerprint = $fp " + pairs_where + ")"
                   if wanted_pairs else "text IN (SELECT text FROM _want_texts)")
    sql = f"""
        WITH scores AS (SELECT text, position, token_id, token, logprob, masked FROM token_scores
                        WHERE fingerprint = $fp AND {texts_where}),
             pairs AS (SELECT pair_id, side, text, position, shared FROM pair_tokens
                       WHERE fingerprint = $fp {pairs_where})
        SELECT * FROM ({var.sql})"""
    try:
        return store.frame(con, sql, {"fp": fingerprint})
    except Exception as e:  # a user's variant that does not run: one line naming its file
        import duckdb

        if not isinstance(e, duckdb.Error):
            raise
        first = str(e).strip().splitlines()[0]
        raise StimkitError(f"{var.path}: {first}") from None
    finally:
        con.unregister("_want_texts")
        if wanted_pairs:
            con.unregister("_want_pairs")


def text_scores(con, fingerprint: str, texts, name: str = "sum", folders=()) -> np.ndarray:
    """One score a text under a text variant (float64; NaN where the variant gives none)."""
    var = variant(name, folders)
    if var.kind != "text":
        raise StimkitError(f"scoring variant {name!r} scores pairs: use pair_scores")
    texts = [str(t) for t in texts]
    frame = _run(con, var, fingerprint, texts=list(dict.fromkeys(texts)))
    _check_columns(var, frame, ("text", "score"))
    got = dict(zip(frame["text"].to_list(), frame["score"].to_list()))
    return np.array([np.nan if got.get(t) is None else got[t] for t in texts], dtype=np.float64)


def pair_scores(con, fingerprint: str, pair_ids, name: str, folders=()) -> pl.DataFrame:
    """(pair_id, side, text, score) for the stored pairs under any variant: a pair variant's
    own rows, or a text variant's score of each side's sentence. Sides without a score are
    absent."""
    var = variant(name, folders)
    pair_ids = list(dict.fromkeys(str(p) for p in pair_ids))
    if var.kind == "pair":
        frame = _run(con, var, fingerprint, pair_ids=pair_ids)
        _check_columns(var, frame, ("pair_id", "side", "text", "score"))
        return frame.select("pair_id", pl.col("side").cast(pl.Int32), "text", pl.col("score").cast(pl.Float64))
    con.register("_want_pairs", pl.DataFrame({"pair_id": pair_ids}, schema={"pair_id": pl.String}).to_arrow())
    try:
        sides = store.frame(con, "SELECT DISTINCT pair_id, side, text FROM pair_tokens WHERE fingerprint = ? "
                                 "AND pair_id IN (SELECT pair_id FROM _want_pairs) ORDER BY pair_id, side", [fingerprint])
    finally:
        con.unregister("_want_pairs")
    frame = _run(con, var, fingerprint, texts=sides["text"].unique().to_list())
    _check_columns(var, frame, ("text", "score"))
    return (sides.join(frame.select("text", pl.col("score").cast(pl.Float64)), on="text", how="inner")
            .select("pair_id", pl.col("side").cast(pl.Int32), "text", "score").sort("pair_id", "side"))


def _check_columns(var: Variant, frame: pl.DataFrame, needed: tuple[str, ...]) -> None:
    absent = [c for c in needed if c not in frame.columns]
    if absent:
        raise StimkitError(f"{var.path}: a {var.kind} variant returns {', '.join(needed)}; "
                           f"this one lacks {', '.join(absent)}")
