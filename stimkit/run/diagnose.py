"""Stimulus diagnostics of a prepared test, stored with its result: per target set, word
frequency (Zipf mean and SD), subword length under the encoder's tokenizer or the OOV share
of a static vocabulary, and the split-half reliability of its words' association profiles;
and the warnings when X and Y differ in frequency or length (stimuli.diagnostics.gaps)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl

from ..encoders import Encoder
from ..errors import StimkitError, first_line
from ..seeding import rng_for
from ..stats import reliability
from ..stimuli import diagnostics
from .rows import DiagnosticRow, Result

# The language whose frequencies describe words whose sets name none.
LANGUAGE = diagnostics.DEFAULT_LANGUAGE


def wordfreq_language(tag: str | None) -> str:
    """wordfreq's code for a set's or a test's language tag: the targets' primary subtag (a
    cross-lingual test's language reads "targets+attributes")."""
    from ..stimuli.language import primary

    return primary((tag or LANGUAGE).split("+")[0])


def words_of(frame: pl.DataFrame) -> list[str]:
    """The distinct words behind a set's stimuli (the stimulus itself where no word is recorded)."""
    column = frame["word"] if "word" in frame.columns and frame["word"].null_count() < frame.height else frame["stimulus"]
    return list(dict.fromkeys(w for w in column.cast(pl.String).to_list() if w))


def pieces(enc: Encoder, words: list[str]) -> np.ndarray | None:
    """The encoder's subword counts of the words, or None where it has no tokenizer (or it fails)."""
    try:
        return enc.subword_counts(words)
    except StimkitError:
        return None


def profiles(prep, enc: Encoder, test_name: str, language: str = LANGUAGE) -> dict[str, diagnostics.SetProfile]:
    """X's and Y's profiles on this encoder, from the stimuli the test kept (before balancing:
    what the word lists hold) and the vectors it read."""
    out = {}
    A, B = prep.vectors["a"], prep.vectors["b"]
    frames = {r: prep.unbalanced[r][0] for r in ("x", "y")}
    vectors = {r: prep.unbalanced[r][1] for r in ("x", "y")}
    reference = np.concatenate([vectors["x"], vectors["y"]])
    for role in ("x", "y"):
        words = words_of(prep.frames[role])
        counted = pieces(enc, words)
        p = diagnostics.profile(words, language, counted, static=enc.static)
        frame = frames[role]
        keys = frame["word"].cast(pl.String).to_list() if "word" in frame.columns else frame["stimulus"].to_list()
        ids = np.unique(np.array(keys, dtype=object), return_inverse=True)[1].astype(np.int64)
        if len(frame) and ids.max() >= 3:  # four words or more: a split-half has halves of two
            prof = reliability.profiles(vectors[role], ids, A, B, reference)
            p = replace(p, reliability=reliability.split_half(prof, rng_for(0, "reliability", test_name, role)))
        out[role] = p
    return out


def rows(result_id: str, found: dict[str, diagnostics.SetProfile], language: str) -> tuple[DiagnosticRow, ...]:
    return tuple(DiagnosticRow(result_id, role.upper(), p.n_words, p.zipf_mean, p.zipf_sd, p.pieces_mean, p.oov_share,
                               p.reliability, language) for role, p in found.items())


def warnings(res: Result) -> list[str]:
    """The result's X and Y compared (stimuli.diagnostics.gaps): a line per gap."""
    found = {d.role: diagnostics.SetProfile(d.n_words, d.zipf_mean, d.zipf_sd, d.pieces_mean, d.oov_share, d.reliability)
             for d in res.diagnostics}
    if set(found) != {"X", "Y"}:
        return []
    return diagnostics.gaps(found["X"], found["Y"], res.test, res.encoder)


def sets_report(con, like: str | None, encoder_specs: list[str] | None,
                language: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """What `sets --diagnose` shows: per current set (name containing `like`), its words' Zipf
    mean and SD, each static encoder's OOV share and each tokenizer's mean subword count (the
    encoders named, else those with vectors in the store: one per model); and per target set
    of the latest results, its split-half reliability. Reads only; notes say what was skipped."""
    from .. import store
    from ..encoders import resolve

    where = "WHERE s.set_name LIKE ?" if like else ""
    words = store.frame(con, "SELECT s.set_name, list(DISTINCT s.word ORDER BY s.word) AS words, any_value(c.language) "
                             f"FROM current_stimuli s JOIN current_sets c ON c.name = s.set_name {where} "
                             "GROUP BY s.set_name ORDER BY s.set_name", [f"%{like}%"] if like else None)
    notes: list[str] = []
    specs = encoder_specs or [s for (s,) in store.rows(con, "SELECT spec FROM encoders ORDER BY created_at")]
    encs, seen = [], set()
    for spec in specs:
        try:
            enc = resolve(spec, con)
        except StimkitError as e:
            notes.append(f"encoder {spec}: skipped ({first_line(e)})")
            continue
        model = (enc.name, enc.static)
        if model not in seen:  # pooling and layer do not change a tokenizer: one column a model
            seen.add(model)
            encs.append(enc)
    rows = []
    for set_name, listed, set_language in words.iter_rows():
        listed = [w for w in listed if w]
        set_language = language or wordfreq_language(set_language)
        p = diagnostics.profile(listed, set_language)
        row = {"set": set_name, "n_words": p.n_words, "zipf_mean": p.zipf_mean, "zipf_sd": p.zipf_sd}
        for enc in encs:
            counted = pieces(enc, listed)
            if counted is None:
                continue
            q = diagnostics.profile(listed, set_language, counted, static=enc.static)
            row[f"oov:{enc.name}" if enc.static else f"pieces:{enc.name}"] = q.oov_share if enc.static else q.pieces_mean
        rows.append(row)
    profiles_df = pl.DataFrame(rows, schema_overrides={"zipf_sd": pl.Float64}) if rows else pl.DataFrame(
        schema={"set": pl.String, "n_words": pl.Int64, "zipf_mean": pl.Float64, "zipf_sd": pl.Float64})
    reliability = store.frame(con, f"""
        WITH sets AS (SELECT DISTINCT i.result_id, i.role, s.name AS set_name
                      FROM result_items i JOIN stimulus_sets s ON s.version = i.set_version WHERE i.role IN ('X', 'Y'))
        SELECT sets.set_name AS set, r.test, r.encoder, d.role, d.n_words, d.reliability
        FROM latest_results r JOIN result_diagnostics d USING (result_id) JOIN sets USING (result_id, role)
        {"WHERE sets.set_name LIKE ?" if like else ""}
        ORDER BY set, r.test, r.encoder""", [f"%{like}%"] if like else None)
    return profiles_df, reliability, notes

