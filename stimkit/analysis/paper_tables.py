"""Tables to read and tables for a paper, from a corrected results frame (`families.corrected`).

- `results_view`: the results with the columns a person reads (`d`, `ci`, `n`) added, and the
  default column sets: what a terminal shows first, what it never drops, what it drops first.
- `paper_table`: chosen columns as LaTeX (booktabs) or Markdown, numbers rounded (d to two
  decimals with its CI and May et al.'s marks, p to three decimals or "<0.001"), encoders under
  their display names, and a caption.
- `table4_paper` / `table4_latex` / `table4_markdown`: Table 4 of May et al. (2019), tests x
  encoders, one row per hypothesis (a test run in two contexts or alternatives gets a row each).
- `tancelis_table`: Tables 7-8 of Tan & Celis (2019) from `analysis.tables.tan_celis`'s frame.

Marks (May et al. 2019, Table 4): * p <= alpha, ** still significant after the correction,
† the test cannot reach p <= alpha whatever the data (its smallest possible p is above alpha).
^ (ours, ASCII and LaTeX-safe): significant only with sentences as units: the same correction
over the p's with whole words as units (p_words) does not reject it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..errors import UsageError
from ..output import interval_text, latex_escape, markdown_escape, with_interval
from ..paths import data_dir
from ..stats.decision import significant

# results: what a terminal shows (in reading order), never drops, and drops first to fit
READ_COLUMNS = ("test", "encoder", "context", "language", "d", "ci", "p_value", "p_adjusted", "rejected", "n", "flags")
KEEP_COLUMNS = ("test", "encoder", "d", "p_value", "p_adjusted", "rejected")
# flags first: a narrow table puts them under the test (STACK) before any column goes
DROP_FIRST = ("flags", "baseline_fpr", "baseline_percentile", "n", "ci", "context", "language")
BASELINE_COLUMNS = ("baseline_percentile", "baseline_fpr")  # shown where some result has a matched baseline
STACK = {"ci": "d", "flags": "test"}  # a narrow terminal shows these under d and test rather than leave them out
SENTENCES_ONLY = "^"  # significant only with sentences as units
SENTENCES_ONLY_NOTE = ("^ after a p: significant at {alpha} only with sentences as units (with whole words as units, "
                       "p > {alpha})")
# A one-sided test whose d lies this far the other way is flagged (Cohen's "large" effect, 0.8:
# Caliskan's d is a standardised mean difference on the same scale): its p near 1 says nothing
# about the association it did find.
OPPOSITE_D = 0.8
PAPER_COLUMNS = ("test", "encoder", "context", "d", "p_value", "p_adjusted", "n")
HEADERS = {"test": "Test", "encoder": "Encoder", "context": "Context", "language": "Language", "d": "d", "ci": "95% CI",
           "p_value": "p", "p_adjusted": "p (adj.)", "rejected": "Rejected", "n": "n (X/Y/A/B, in units)",
           "encoding": "Encoding", "section": "Section", "baseline_percentile": "Baseline percentile",
           "baseline_fpr": "Baseline FPR"}
LATEX_HEADERS = {"d": "$d$", "p_value": "$p$", "p_adjusted": "$p_{\\mathrm{adj}}$", "n": "$n$ (X/Y/A/B, in units)"}
# what can make two results of one test and encoder different hypotheses (analysis.families.HYPOTHESIS)
CORRECTION_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg", "by": "Benjamini-Yekutieli", "none": "no"}
VARIANT_COLUMNS = ("context", "alternative", "balance", "units", "p_method", "centering")


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


def mark_note(correct: str, alpha: float, family, cells=None) -> str:
    """The marks, said once: * ** † and, where sentence units are in the family, ^. `cells`:
    the table's cells, so that only the marks that appear in them are explained (None: all)."""
    shown = marks_in(cells) if cells is not None else {"*", "**", SENTENCES_ONLY, "†"}
    name = CORRECTION_NAMES.get(correct, correct)
    parts = []
    if "*" in shown or "**" in shown:
        parts.append(f"* p <= {alpha}; ** also significant after {name} correction" if correct != "none"
                     else f"* p <= {alpha}, no correction")
    if SENTENCES_ONLY in shown and has_sentence_units(family):
        parts.append(f"{SENTENCES_ONLY} significant only with sentences as units (with whole words as units, "
                     f"{'the same correction' if correct != 'none' else f'p > {alpha}'} does not reject)")
    if "†" in shown:
        parts.append(f"† cannot reach p <= {alpha}")
    return "; ".join(parts) or f"no result significant at p <= {alpha}"


# The table of each published paper that its built-in study reproduces.
PAPER_TABLES = {"may-2019": "May et al. 2019, Table 4", "tan-celis-2019": "Tan and Celis 2019, Tables 7-8"}


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
    if "flip_word" not in df.columns:
        return []
    def units(r):
        return f" ({r['units']} as units)" if r.get("units") and r.get("context") != "word" else ""

    return [f"{r['test']} / {r['encoder']}{units(r)}: {fragile_text(r['flip_word'], r.get('flip_d'), r.get('flip_p'))}"
            for r in df.filter(pl.col("flip_word").is_not_null()).iter_rows(named=True)]


def has_ci(df: pl.DataFrame) -> bool:
    return "ci_low" in df.columns and "ci_high" in df.columns and df["ci_low"].is_not_null().any()


def results_view(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with `d` (= effect_size), `ci` ("[low, high]" where a bootstrap CI exists), `n`
    ("n_x/n_y/n_a/n_b") and `crossed` (crossed d with its interval, where one was estimated)
    added; every original column stays, for --columns and machine formats."""
    extra = []
    if "effect_size" in df.columns and "d" not in df.columns:
        extra.append(pl.col("effect_size").alias("d"))
    if has_ci(df) and "ci" not in df.columns:
        extra.append(pl.Series("ci", [interval_text(lo, hi) or None for lo, hi in zip(df["ci_low"], df["ci_high"])],
                               dtype=pl.String))
    if {"n_x", "n_y", "n_a", "n_b"} <= set(df.columns) and "n" not in df.columns and df.height:
        extra.append(pl.Series("n", [n_text(r) for r in df.iter_rows(named=True)], dtype=pl.String))
    if "flags" not in df.columns and df.height:
        extra.append(pl.Series("flags", [flags(r) or None for r in df.iter_rows(named=True)], dtype=pl.String))
    if "crossed_d" in df.columns and "crossed" not in df.columns and df["crossed_d"].is_not_null().any():
        # words and templates as random factors (stats.crossed): "+0.62 [-0.10, 1.25]", for --columns and --wide
        extra.append(pl.Series("crossed", [None if d is None else with_interval(f"{d:+.2f}", lo, hi) for d, lo, hi
                                           in zip(df["crossed_d"], df["crossed_ci_low"], df["crossed_ci_high"])],
                               dtype=pl.String))
    return df.with_columns(extra) if extra else df


def n_text(row: dict) -> str:
    """A result's n in its units: a word test's words (X/Y/A/B); a sentence test with words as
    units, its target words a side with the sentences beside (`10/10 words; 40/40/40/40
    sentences`); with sentences as units, the sentences."""
    counts = f"{row['n_x']}/{row['n_y']}/{row['n_a']}/{row['n_b']}"
    if row.get("context") == "word":
        return f"{counts} words"
    if row.get("units") == "words" and row.get("words_x") is not None:
        return f"{row['words_x']}/{row['words_y']} words; {counts} sentences"
    return f"{counts} sentences"


def read_columns(df: pl.DataFrame) -> list[str]:
    """The default terminal columns present in `df` (`ci` only where a CI exists; `language`
    only where a result is not in English; the baseline's only where some result has one)."""
    english = "language" not in df.columns or df["language"].drop_nulls().is_in(["en"]).all()
    shown = [c for c in READ_COLUMNS if c in df.columns and not (c == "language" and english)]
    return shown + [c for c in BASELINE_COLUMNS if c in df.columns and df[c].null_count() < df.height]


def choose_columns(df: pl.DataFrame, spec: str | None, default: list[str] | None) -> list[str] | None:
    """`--columns a,b,c` checked against `df` (a usage error names the unknown ones and the known);
    without it, `default` (None: every column)."""
    if not spec:
        return default
    names = [c.strip() for c in spec.split(",") if c.strip()]
    unknown = [c for c in names if c not in df.columns]
    if unknown:
        raise UsageError(f"--columns: no column {', '.join(map(repr, unknown))} (known: {', '.join(df.columns)})")
    return names


def display_names(df: pl.DataFrame) -> dict[str, str]:
    """Encoder spec -> the name a paper prints: the results' `display` column where it is set,
    else the spec itself."""
    names = {}
    for r in df.select([c for c in ("encoder", "display") if c in df.columns]).iter_rows(named=True):
        shown = r.get("display")
        names.setdefault(r["encoder"], shown if shown else r["encoder"])
    return names


def marks(row: dict, alpha: float) -> str:
    """May et al.'s marks for one result: ** rejected after correction, * p <= alpha, † cannot
    reject; and ^: significant only with sentences as units."""
    mark = "**" if row.get("rejected") else ("*" if significant(row.get("p_value"), alpha) else "")
    return mark + (SENTENCES_ONLY if row.get("sentences_only") else "") + ("†" if row.get("can_reject") is False else "")


def fmt_d(d) -> str:
    return "" if d is None or (isinstance(d, float) and math.isnan(d)) else f"{d:+.2f}"


def fmt_p(p) -> str:
    """p to three decimals, or "<0.001" (APA style): what a paper reports."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _cell(row: dict, column: str, alpha: float, names: dict[str, str], ci_in_d: bool) -> str:
    value = row.get(column)
    if column == "d":
        text = fmt_d(value) + marks(row, alpha)
        return with_interval(text, row.get("ci_low"), row.get("ci_high")) if ci_in_d else text
    if column in ("p_value", "p_adjusted", "min_p"):
        return fmt_p(value)
    if column == "encoder":
        return names.get(value, value or "")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.3g}"
    return "" if value is None else str(value)


def paper_table(df: pl.DataFrame, columns: list[str] | None, fmt: str, caption: str,
                display_names: dict[str, str] | None = None, *, alpha: float = 0.01) -> str:
    """Results as a LaTeX (booktabs `table`) or Markdown table ready for a paper.

    columns: from `results_view(df)` (None: PAPER_COLUMNS present); d carries its marks and,
    when the `ci` column is not asked for separately, its CI."""
    view = results_view(df)
    columns = [c for c in (columns or PAPER_COLUMNS) if c in view.columns]
    names = display_names if display_names is not None else globals()["display_names"](view)
    ci_in_d = "ci" not in columns
    rows = [[_cell(r, c, alpha, names, ci_in_d) for c in columns] for r in view.iter_rows(named=True)]
    numeric = [c in ("d", "p_value", "p_adjusted") or view.schema[c].is_numeric() for c in columns]
    return render_table(columns, rows, numeric, fmt, caption)


def render_table(columns: list[str], rows: list[list[str]], numeric: list[bool], fmt: str, caption: str,
                 groups: list[int] | None = None, headers: dict[str, str] | None = None) -> str:
    """Plain cells as a booktabs LaTeX table or a Markdown table with a `Table:` caption line.
    groups: row indices before which a LaTeX table draws a \\midrule (sections); headers: a
    column's heading where it is not HEADERS' (an encoder's display name)."""
    given = headers or {}
    headers = {**HEADERS, **given}
    if fmt == "latex":
        head = " & ".join(LATEX_HEADERS[c] if c in LATEX_HEADERS and c not in given else latex_escape(headers.get(c, c))
                          for c in columns)
        body = []
        for i, row in enumerate(rows):
            if groups and i in groups and i:
                body.append(r"\midrule")
            body.append(" & ".join(latex_escape(c) for c in row) + r" \\")
        spec = "".join("r" if n else "l" for n in numeric)
        return "\n".join([r"% needs \usepackage{booktabs}", r"\begin{table}", r"\centering",
                          rf"\caption{{{latex_escape(caption)}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
                          head + r" \\", r"\midrule", *body, r"\bottomrule", r"\end{tabular}", r"\end{table}"]) + "\n"
    if fmt == "markdown":
        lines = ["| " + " | ".join(markdown_escape(headers.get(c, c)) for c in columns) + " |",
                 "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"]
        lines += ["| " + " | ".join(markdown_escape(c) for c in row) + " |" for row in rows]
        return "\n".join(lines) + f"\n\nTable: {markdown_escape(caption)}\n"
    raise UsageError(f"a paper table is latex or markdown, not {fmt!r}")


# ---------------------------------------------------------------- Table 4 (May et al. 2019)

@dataclass
class Table4:
    """Tests x encoders, one row per hypothesis; `note` says what a row label's suffix means."""
    rows: list[str]
    encoders: list[str]
    d: dict[tuple[str, str], float] = field(default_factory=dict)
    labels: dict[tuple[str, str], str] = field(default_factory=dict)
    ci: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # the interval of d, where computed
    p: dict[tuple[str, str], tuple[float | None, float | None]] = field(default_factory=dict)  # (p, adjusted p)
    note: str = ""

    def cell(self, label: str, encoder: str, sep: str = " ") -> str | None:
        """What a reader sees in a cell: d with its marks and, where one was computed, its 95%
        interval after `sep` ("+1.71** [1.37, 1.82]"); None for a hypothesis with no result."""
        text = self.labels.get((label, encoder))
        return None if text is None else with_interval(text, *self.ci.get((label, encoder), (None, None)), sep=sep)

    def tooltip(self, label: str, encoder: str, name: str | None = None) -> str | None:
        """A cell said in full, for a figure's tooltip: test, encoder, d, interval, p and adjusted p."""
        if (label, encoder) not in self.d:
            return None
        ci = self.ci.get((label, encoder))
        p, p_adj = self.p.get((label, encoder), (None, None))
        return (f"{label} / {name or encoder}: d = {self.d[(label, encoder)]:+.3f}"
                + (f", 95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
                + (f", p = {p:.3g}" if p is not None else "") + (f", adjusted p = {p_adj:.3g}" if p_adj is not None else ""))

    def grid(self, names: dict[str, str] | None = None) -> tuple[list[str], list[dict]]:
        """The columns (test, then each encoder under its display name) and a dict per row."""
        names = names or {}
        columns = ["test", *(names.get(e, e) for e in self.encoders)]
        return columns, [{"test": r, **{names.get(e, e): self.cell(r, e) for e in self.encoders}} for r in self.rows]


def table4(df: pl.DataFrame, alpha: float, order: list[str] | None = None,
           encoders: list[str] | None = None) -> Table4:
    """The cells of Table 4: d with its marks per (row, encoder). A test whose results differ in
    context, alternative, balance, clustering or p procedure gets a row per variant, labelled
    "test (word, greater)", so that no cell hides another hypothesis. Only WEAT's d: other
    metrics (a `metric` column) have scales of their own."""
    if "metric" in df.columns:
        df = df.filter(df["metric"].fill_null("weat") == "weat")
    present = list(dict.fromkeys(df["encoder"].to_list()))
    encoders = [e for e in (encoders or []) if e in present] + sorted(set(present) - set(encoders or []))
    varying: dict[str, list[str]] = {}
    for test, part in df.group_by("test", maintain_order=True):
        cols = [c for c in VARIANT_COLUMNS if c in part.columns and part[c].n_unique() > 1]
        varying[test[0]] = cols
    if "created_at" in df.columns:
        df = df.sort("created_at")  # the latest result wins a cell
    rank = {t: i for i, t in enumerate(order or [])}
    out = Table4([], encoders)
    keys = []
    for r in df.iter_rows(named=True):
        cols = varying[r["test"]]
        label = r["test"] + (f" ({', '.join(_variant(c, r[c]) for c in cols)})" if cols else "")
        keys.append((rank.get(r["test"], len(rank)), r["test"], label))
        out.d[(label, r["encoder"])] = r["effect_size"]
        out.labels[(label, r["encoder"])] = fmt_d(r["effect_size"]) + marks(r, alpha)
        if r.get("ci_low") is not None and r.get("ci_high") is not None:
            out.ci[(label, r["encoder"])] = (r["ci_low"], r["ci_high"])
        out.p[(label, r["encoder"])] = (r.get("p_value"), r.get("p_adjusted"))
    out.rows = [label for *_, label in sorted(set(keys))]
    shown = sorted({c for cols in varying.values() for c in cols})
    if shown:
        out.note = f"a test with results that differ in {', '.join(shown)} has a row for each"
    return out


def _variant(column: str, value) -> str:
    if column == "units":
        return f"{value} as units"
    return str(value)


def table4_paper(df: pl.DataFrame, alpha: float, fmt: str, caption: str, display_names: dict[str, str] | None = None,
                 order: list[str] | None = None, encoders: list[str] | None = None) -> str:
    """Table 4 as LaTeX or Markdown: a row per hypothesis, a column per encoder (display names)."""
    names = display_names if display_names is not None else globals()["display_names"](df)
    return render_table4(table4(df, alpha, order, encoders), fmt, caption, names)


def render_table4(t: Table4, fmt: str, caption: str, names: dict[str, str], heads: dict[str, str] | None = None) -> str:
    """Table 4's cells as LaTeX or Markdown, the encoders under their display `names`, each row
    under its head (`heads`: row label -> the test's categories) or its label."""
    heads = heads or {}
    rows = [[heads.get(label, label)] + [t.cell(label, e) or "" for e in t.encoders] for label in t.rows]
    caption = caption + (f" ({t.note}.)" if t.note else "") + (" Brackets: the 95% interval of d." if t.ci else "")
    return render_table(["test", *t.encoders], rows, [False] + [True] * len(t.encoders), fmt, caption,
                        headers={e: names.get(e, e) for e in t.encoders})


def table4_latex(df: pl.DataFrame, alpha: float, caption: str, display_names: dict[str, str] | None = None,
                 order: list[str] | None = None, encoders: list[str] | None = None) -> str:
    return table4_paper(df, alpha, "latex", caption, display_names, order, encoders)


def table4_markdown(df: pl.DataFrame, alpha: float, caption: str, display_names: dict[str, str] | None = None,
                    order: list[str] | None = None, encoders: list[str] | None = None) -> str:
    return table4_paper(df, alpha, "markdown", caption, display_names, order, encoders)


# ---------------------------------------------------------------- Tables 7-8 (Tan & Celis 2019)

def tancelis_table(layout: pl.DataFrame, fmt: str, caption: str, display_names: dict[str, str] | None = None) -> str:
    """Tables 7-8 from `analysis.tables.tan_celis`'s frame (section, test, encoding, one column per
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
