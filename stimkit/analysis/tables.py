"""Tables from results: Tan & Celis's Tables 7 and 8, and the original SEAT code's results.tsv
layout (Table 4 and the paper tables: analysis.paper_tables).

Tables 7 and 8 show each test (a row of the paper: C1..C10 from May et al., +C11.. from
Tan & Celis) as up to five encodings -- word, sent, sent (u), c-word, c-word (u) -- by
encoder. A cell is d, with `*` when the test is significant after the chosen correction.
A c-word cell also carries the paper's comparison with its sentence cell:
"✓" significant with c-word only, "✗" with sent only, "▲" with both. "^" after `*`: significant
only with sentences as units (analysis.paper_tables).
"NA": the encoder gives no c-word vectors (static word vectors, sentence-only encoders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..errors import UsageError
from ..output import with_interval

if TYPE_CHECKING:
    from ..catalog.definitions import TestDef

SENTBIAS_COLUMNS = ["model", "options", "test", "p_value", "effect_size", "num_targ1", "num_targ2", "num_attr1", "num_attr2"]
ENCODINGS = ("word", "sent", "sent (u)", "c-word", "c-word (u)")
MARKS = {(True, False): "✓", (False, True): "✗", (True, True): "▲"}  # (c-word, sent) significant


def encoding(test: TestDef, context: str) -> str:
    """A result's column in the paper: its context, "(u)" for unbleached sentences."""
    if context == "word":
        return "word"
    base = "sent" if context == "sentence" else "c-word"  # token pooling by hand counts as c-word
    return f"{base} (u)" if test.unbleached else base


def tan_celis(df: pl.DataFrame, tests: dict[str, TestDef], paper_rows: list[tuple[str, str, str]],
              encoder_order: list[str] | None = None) -> pl.DataFrame:
    """Tables 7/8 (Tan & Celis 2019) from a corrected results frame (columns test, encoder, context, effect_size,
    rejected, and ci_low/ci_high where computed; the latest result wins where a test ran twice): one
    row per test and encoding, one column per encoder, each cell d with its marks and its interval."""
    missing = {"test", "encoder", "context", "effect_size", "rejected"} - set(df.columns)
    if missing:
        raise UsageError(f"results frame lacks column(s) {', '.join(sorted(missing))}")
    if "created_at" in df.columns:
        df = df.sort("created_at")
    wanted = {paper_test for _, paper_test, _ in paper_rows}
    cells: dict[tuple[str, str, str], tuple[float, bool]] = {}
    for r in df.iter_rows(named=True):
        if r.get("metric", "weat") != "weat":
            continue
        test = tests.get(r["test"])
        if test is None or test.paper_test not in wanted:
            continue
        cells[(test.paper_test, encoding(test, r["context"]), r["encoder"])] = (r["effect_size"], bool(r["rejected"]),
                                                                                 r.get("ci_low"), r.get("ci_high"),
                                                                                 bool(r.get("sentences_only")))
    present = list(dict.fromkeys(df["encoder"].to_list()))
    encs = [e for e in (encoder_order or []) if e in present] + [e for e in present if e not in (encoder_order or [])]
    with_cword = {e for (_, enc_name, e) in cells if enc_name.startswith("c-word")}
    rows = []
    for section, paper_test, label in paper_rows:
        for enc_name in ENCODINGS:
            if not any((paper_test, enc_name, e) in cells for e in encs):
                continue
            row = {"section": section, "test": label, "encoding": enc_name}
            for e in encs:
                row[e] = cell(cells, paper_test, enc_name, e, e in with_cword)
            rows.append(row)
    return pl.DataFrame(rows, schema={c: pl.String for c in ["section", "test", "encoding", *encs]})


def cell(cells: dict, paper_test: str, enc_name: str, encoder: str, has_cword: bool) -> str:
    got = cells.get((paper_test, enc_name, encoder))
    if got is None:
        return "NA" if enc_name.startswith("c-word") and not has_cword else ""
    d, significant, ci_low, ci_high, sentences_only = got
    text = f"{d:+.2f}" + ("*" if significant else "") + ("^" if sentences_only else "")
    if enc_name.startswith("c-word"):
        sent = cells.get((paper_test, enc_name.replace("c-word", "sent"), encoder))
        if sent is not None:
            text += MARKS.get((significant, sent[1]), "")
    return with_interval(text, ci_low, ci_high)


SEAT_NAMES = {"n_x": "num_targ1", "n_y": "num_targ2", "n_a": "num_attr1", "n_b": "num_attr2"}


def sentbias_rows(df: pl.DataFrame) -> pl.DataFrame:
    """The original SEAT code's results.tsv layout (its column names, and `options`: the
    encoder's options), so its analysis scripts read it. Only this format renames."""
    options = pl.col("encoder").str.splitn(",", 2).struct.field("field_1").fill_null("").str.replace_all(",", ";")
    return df.rename(SEAT_NAMES).with_columns(options=options).select(SENTBIAS_COLUMNS)
