"""Tan & Celis's Tables 7 and 8, and their LaTeX and Markdown.

Tables 7 and 8 show each test (a row of the paper: C1..C10 from May et al., +C11.. from
Tan & Celis) as up to five encodings -- word, sent, sent (u), c-word, c-word (u) -- by
encoder. A cell is d, with `*` when the test is significant after the chosen correction.
A c-word cell also carries the paper's comparison with its sentence cell:
"✓" significant with c-word only, "✗" with sent only, "▲" with both. "^" after `*`: significant
only with sentences as units (views.text).
"NA": the encoder gives no c-word vectors (static word vectors, sentence-only encoders).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import polars as pl

from ..errors import UsageError
from . import text
from .emit import default_format, emit, err, print_rows
from .paper import render_table
from .text import with_interval

if TYPE_CHECKING:
    from ..catalog.definitions import TestDef

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
    shown = f"{d:+.2f}" + ("*" if significant else "") + ("^" if sentences_only else "")
    if enc_name.startswith("c-word"):
        sent = cells.get((paper_test, enc_name.replace("c-word", "sent"), encoder))
        if sent is not None:
            shown += MARKS.get((significant, sent[1]), "")
    return with_interval(shown, ci_low, ci_high)


def tancelis_table(layout: pl.DataFrame, fmt: str, caption: str, display_names: dict[str, str] | None = None) -> str:
    """Tables 7-8 from `tan_celis`'s frame (section, test, encoding, one column per
    encoder): a test's name on its first row only, a rule between sections (LaTeX)."""
    encoders = [c for c in layout.columns if c not in ("section", "test", "encoding")]
    names = display_names or {}
    rows, groups, last_section, last_test = [], [], None, None
    for r in layout.iter_rows(named=True):
        if r["section"] != last_section:
            groups.append(len(rows))
        first = (r["section"], r["test"]) != (last_section, last_test)
        rows.append([r["section"] if r["section"] != last_section else "", r["test"] if first else "", r["encoding"]]
                    + [r[e] or "" for e in encoders])
        last_section, last_test = r["section"], r["test"]
    return render_table(["section", "test", "encoding", *encoders], rows, [False] * 3 + [True] * len(encoders),
                        fmt, caption, groups, headers={e: names.get(e, e) for e in encoders})


COMPARISON = "c-word vs sent: ✓ c-word only, ✗ sent only, ▲ both; [95% interval of d]"


def show(frame: pl.DataFrame, results: pl.DataFrame, family, fmt: str) -> None:
    """`stimkit results --layout tan-celis` printed: the legend (stderr) and the grid, or the
    paper's LaTeX/Markdown table with its caption."""
    correct, alpha = family.correction, family.alpha
    if fmt in ("latex", "markdown"):
        sys.stdout.write(tancelis_table(
            frame, fmt, text.caption(family, correct, alpha, "Effect size d (Tan and Celis 2019, Tables 7-8); c-word vs "
                                                             "sent: ✓ significant for c-word only, ✗ sent only, ▲ both; "
                                                             "brackets: the 95% interval of d"),
            text.display_names(results)))
        return
    only = "; ^ only with sentences as units" if text.has_sentence_units(family) else ""
    err.print(f"d by test, encoding and encoder; * significant after {correct} at {alpha}{only}; {COMPARISON}; "
              f"tested: {family.tested} ({family.settings})", highlight=False)
    emit(frame, fmt)


def show_run(frame: pl.DataFrame, results: pl.DataFrame, family, study, alpha: float, fmt: str | None) -> None:
    """`stimkit run`'s Tables 7-8 of a study: the grid under its title (a terminal table holds
    it, other formats say it on stderr), or the paper's LaTeX/Markdown table with its caption."""
    what = (f"{study.name}: d by test, encoding and encoder; * significant after {study.correction} at {alpha}"
            + ("; ^ only with sentences as units" if text.has_sentence_units(family) else "") + f"; {COMPARISON}")
    if fmt in ("latex", "markdown"):  # a paper's table: booktabs or pipes, with its caption
        sys.stdout.write(tancelis_table(frame, fmt, text.caption(family, study.correction, alpha, what),
                                        text.display_names(results)))
        return
    title = f"{what}; tested: {family.tested}"
    if (fmt or default_format()) == "table":
        print_rows(frame.to_dicts(), frame.columns, title)
    else:
        err.print(title, highlight=False)
        emit(frame, fmt)
