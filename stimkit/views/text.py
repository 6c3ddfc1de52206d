"""The text of a cell and of what stands around a table, said once for every view: d with May et
al.'s marks, p as people and papers read it, an interval, a result's n and flags, and the
captions and legends that explain the marks.

Marks (May et al. 2019, Table 4): * p <= alpha, ** still significant after the correction,
† the test cannot reach p <= alpha whatever the data (its smallest possible p is above alpha).
^ (ours, ASCII and LaTeX-safe): significant only with sentences as units: the same correction
over the p's with whole words as units (p_words) does not reject it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from ..paths import data_dir

if TYPE_CHECKING:  # polars and the statistics are imported where used: `count` and `family_line` serve the CLI's start-up
    import polars as pl

SENTENCES_ONLY = "^"  # significant only with sentences as units
SENTENCES_ONLY_NOTE = ("^ after a p: significant at {alpha} only with sentences as units (with whole words as units, "
                       "p > {alpha})")
# A one-sided test whose d lies this far the other way is flagged (Cohen's "large" effect, 0.8:
# Caliskan's d is a standardised mean difference on the same scale): its p near 1 says nothing
# about the association it did find.
OPPOSITE_D = 0.8
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "by": "Benjamini-Yekutieli", "none": "no"}

# The table of each published paper that its built-in study reproduces.
PAPER_TABLES = {"may-2019": "May et al. 2019, Table 4", "tan-celis-2019": "Tan and Celis 2019, Tables 7-8"}


def interval_text(low: float | None, high: float | None) -> str:
    """A 95% interval of d as every view prints it, "[1.37, 1.82]"; "" where none was computed."""
    return "" if low is None or high is None else f"[{low:.2f}, {high:.2f}]"


def with_interval(text: str, low: float | None, high: float | None, sep: str = " ") -> str:
    """`text` (a d) followed by its interval, where one was computed: "+1.71** [1.37, 1.82]"."""
    interval = interval_text(low, high)
    return f"{text}{sep}{interval}" if interval else text


def p_text(p: float | None, floor: float | None = None) -> str:
    """A p-value as people read it: 3 significant digits, and `<= floor` when p is the
    smallest value its procedure can give (1/budget sampled, 1/C(n) exact): the data may
    support a smaller p that the procedure cannot show."""
    if p is None:
        return "n/a"
    if floor is not None and p <= floor * (1 + 1e-9):
        return f"<= {floor:.3g}"
    return f"{p:.3g}"


def fmt_d(d) -> str:
    return "" if d is None or (isinstance(d, float) and math.isnan(d)) else f"{d:+.2f}"


def fmt_p(p) -> str:
    """p to three decimals, or "<0.001" (APA style): what a paper reports."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def marks(row: dict, alpha: float) -> str:
    """May et al.'s marks for one result: ** rejected after correction, * p <= alpha, † cannot
    reject; and ^: significant only with sentences as units."""
    from ..stats.decision import significant

    mark = "**" if row.get("rejected") else ("*" if significant(row.get("p_value"), alpha) else "")
    return mark + (SENTENCES_ONLY if row.get("sentences_only") else "") + ("†" if row.get("can_reject") is False else "")


def has_sentence_units(family) -> bool:
    return any(units == "sentences" for _, units, _ in family.units)


def marks_in(cells) -> set[str]:
    """The marks that appear in a table's cells: '*' (a lone star), '**', '^', '†'."""
    import re

    text = " ".join(str(c) for c in cells if c is not None)
    found = {m for m in ("**", SENTENCES_ONLY, "†") if m in text}
    if re.search(r"(?<!\*)\*(?!\*)", text):
        found.add("*")
    return found


def stars_said(shown: set[str], correct: str, alpha: float) -> str:
    """* and ** in words, each only where a cell carries it: "* p <= 0.01; ** also significant
    after Holm correction", "** p <= 0.01 and significant after Holm correction", ..."""
    name = CORRECTION_NAMES.get(correct, correct)
    if correct == "none":  # every p <= alpha is rejected: one mark, whichever the cells carry
        return "; ".join(f"{m} p <= {alpha}, no correction" for m in ("*", "**") if m in shown)
    if "*" in shown and "**" in shown:
        return f"* p <= {alpha}; ** also significant after {name} correction"
    if "**" in shown:
        return f"** p <= {alpha} and significant after {name} correction"
    if "*" in shown:
        return f"* p <= {alpha} (not significant after {name} correction)"
    return ""


def mark_note(correct: str, alpha: float, family, cells=None) -> str:
    """The marks, said once: * ** † and, where sentence units are in the family, ^. `cells`:
    the table's cells, so that only the marks that appear in them are explained (None: all)."""
    shown = marks_in(cells) if cells is not None else {"*", "**", SENTENCES_ONLY, "†"}
    parts = [stars_said(shown, correct, alpha)] if shown & {"*", "**"} else []
    if SENTENCES_ONLY in shown and has_sentence_units(family):
        parts.append(f"{SENTENCES_ONLY} significant only with sentences as units (with whole words as units, "
                     f"{'the same correction' if correct != 'none' else f'p > {alpha}'} does not reject)")
    if "†" in shown:
        parts.append(f"† cannot reach p <= {alpha}")
    return "; ".join(parts) or f"no result significant at p <= {alpha}"


def source(study=None, results: pl.DataFrame | None = None, tests: dict | None = None) -> str:
    """Where a table's numbers come from, for its caption: the paper's table when the study is
    the paper's own (a built-in study: `may-2019`, `tan-celis-2019`), the study by name when it is
    anyone else's (a study file of yours is yours, whatever it selects or is called); with no
    study, the paper's table only when every result is one paper's catalog test (`tests`: the
    catalog), else ""."""
    if study is not None:
        builtin = study.path is not None and Path(study.path).parent == data_dir("queries") / "studies"
        return PAPER_TABLES[study.name] if builtin and study.name in PAPER_TABLES else f"study {study.name}"
    if results is None or results.height == 0 or tests is None:
        return ""
    papers = {tests[t].paper if t in tests and s == "catalog" else None
              for t, s in results.select("test", "test_source").iter_rows()}
    return PAPER_TABLES.get(papers.pop(), "") if len(papers) == 1 else ""


def sourced(what: str, where: str) -> str:
    """A caption's head: what the table shows, and where it comes from when that is known."""
    return f"{what} ({where})" if where else what


def caption(family, correct: str, alpha: float, what: str = "Results", cells=None) -> str:
    """A paper table's caption: what it shows, the marks (those in `cells`; None: all), what was
    tested (alternative and units), the correction and the family with its m."""
    scope = f"run {family.run}" if family.run else "the latest result per hypothesis"
    if family.where:
        scope += f", where {family.where}"
    return (f"{what}; {mark_note(correct, alpha, family, cells)}. Tested: {family.tested}. "
            f"Family: m = {family.m} hypotheses ({scope}).")


def legend(family, cells=None) -> str:
    """A terminal table's legend: the marks that appear in `cells` (None: all), what was tested,
    and where alpha and the correction came from."""
    return f"{mark_note(family.correction, family.alpha, family, cells)}; tested: {family.tested} ({family.settings})"


def flags(row: dict) -> str:
    """What a reader must know before trusting a result, in words: the decision flips without
    one word (at the reading alpha: `flip_*`), it is significant only with sentences as units,
    or a one-sided test found a large d the other way."""
    found = []
    if row.get("flip_word") is not None:
        found.append(fragile_text(row["flip_word"], row.get("flip_d"), row.get("flip_p")))
    if row.get("sentences_only"):
        found.append(f"{SENTENCES_ONLY} words as units: p {row['p_words']:.2g}" if row.get("p_words") is not None
                     else f"{SENTENCES_ONLY} only with sentences as units")
    d, alternative = row.get("effect_size"), row.get("alternative")
    if d is not None and ((alternative == "greater" and d <= -OPPOSITE_D) or (alternative == "less" and d >= OPPOSITE_D)):
        found.append(f"d {d:+.2f} is large the other way (alternative {alternative})")
    return "; ".join(found)


def fragile_text(word: str, d, p) -> str:
    """"fragile: without 'frail' d +0.19, p 0.19"."""
    return (f"fragile: without {word!r}" + (f" d {d:+.2f}" if d is not None else "")
            + (f", p {p:.2g}" if p is not None else ""))


def fragile_lines(df: pl.DataFrame) -> list[str]:
    """A line per result whose decision flips without one word, for under a table."""
    import polars as pl

    if "flip_word" not in df.columns:
        return []
    def units(r):
        return f" ({r['units']} as units)" if r.get("units") and r.get("context") != "word" else ""

    return [f"{r['test']} / {r['encoder']}{units(r)}: {fragile_text(r['flip_word'], r.get('flip_d'), r.get('flip_p'))}"
            for r in df.filter(pl.col("flip_word").is_not_null()).iter_rows(named=True)]


def likelihood_text(row: dict) -> str:
    """A likelihood result's scoring variant and units: "sum; words as units"."""
    import json

    try:
        variant = json.loads(row.get("options") or "{}").get("variant") or "sum"
    except (TypeError, ValueError):  # a row without its options: the default variant
        variant = "sum"
    return f"{variant}; {row.get('units') or 'words'} as units"


def n_text(row: dict) -> str:
    """A result's n in its units: a word test's words (X/Y/A/B); a sentence test with words as
    units, its target words a side with the sentences beside (`10/10 words; 40/40/40/40
    sentences`); with sentences as units, the sentences."""
    counts = f"{row['n_x']}/{row['n_y']}/{row['n_a']}/{row['n_b']}"
    if row.get("context") == "minimal-pairs":  # a language model's likelihood form (run.likelihood)
        # the form said here too: a narrow terminal may leave the context column out
        return f"{row['n_x']}/{row['n_y']} sentences in minimal pairs ({likelihood_text(row)})"
    if row.get("context") == "likelihood-weat":  # its WEAT form: s per target word x template line
        return f"{row['n_x']}/{row['n_y']} likelihood WEAT cells ({likelihood_text(row)})"  # word x template line
    if row.get("context") == "word":
        return f"{counts} words"
    if row.get("units") == "words" and row.get("words_x") is not None:
        return f"{row['words_x']}/{row['words_y']} words; {counts} sentences"
    return f"{counts} sentences"


def display_names(df: pl.DataFrame) -> dict[str, str]:
    """Encoder spec -> the name a paper prints: the results' `display` column where it is set,
    else the spec itself."""
    names = {}
    for r in df.select([c for c in ("encoder", "display") if c in df.columns]).iter_rows(named=True):
        shown = r.get("display")
        names.setdefault(r["encoder"], shown if shown else r["encoder"])
    return names


def study_names(encoders, display: dict[str, str] | None) -> dict[str, str]:
    """Encoder spec -> the name a study's `[display]` gives it: the spec's own entry, else its
    model's (`"minilm" = "MiniLM"` names `minilm,pooling=mean` and `minilm,pooling=cls`), with
    the spec's options beside where the table holds more than one spec of that model
    ("MiniLM (pooling=cls)"). Specs it does not name are left out."""
    display = dict(display or {})
    specs = list(dict.fromkeys(e for e in encoders if e))
    models = [e.partition(",")[0] for e in specs]
    names = {}
    for spec, model in zip(specs, models):
        if spec in display:
            names[spec] = display[spec]
        elif model in display:
            options = spec.partition(",")[2]
            names[spec] = display[model] + (f" ({options})" if options and models.count(model) > 1 else "")
    return names


IRREGULAR = {"stimulus": "stimuli", "hypothesis": "hypotheses", "analysis": "analyses"}


def count(n: int, noun: str) -> str:
    """`1 test`, `2 tests`, `1 stimulus`, `3 stimuli`."""
    return f"{n} {noun}" if n == 1 else f"{n} {IRREGULAR.get(noun, noun + 's')}"


def family_line(family, correct: str | None = None, alpha: float | None = None, verbose: bool = False) -> str:
    """The family in one short line (m, whole store or one run, the filter); `verbose`: its full definition."""
    if verbose:
        scope = family.definition
    else:
        scope = "latest result per hypothesis, " + (f"run {family.run}" if family.run else "whole store")
        if family.where:
            scope += f", where {family.where}"
    line = f"family: m = {family.m} ({scope})"
    if correct is not None:
        line += f"; {correct} at alpha {alpha}"
    return line
