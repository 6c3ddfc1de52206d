"""Table 4 of May et al. (2019): tests x encoders, one row per hypothesis (a test run in two
contexts or alternatives gets a row each), d with its marks and interval; one rendering for
`stimkit run`, `stimkit results --table` and the report: the same result gives the same cell in
each. `build`: the cells; `table4`: the grid under display names and heads; `render`/`paper`:
as LaTeX or Markdown; `show`: printed by a command."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import polars as pl

from . import text
from .emit import emit, err
from .paper import render_table
from .text import fmt_d, marks, with_interval

TITLE = "Effect size d by test and encoder"
# what can make two results of one test and encoder different hypotheses (analysis.families.HYPOTHESIS)
VARIANT_COLUMNS = ("context", "alternative", "balance", "units", "p_method", "centering", "scoring")


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
        shown = self.labels.get((label, encoder))
        return None if shown is None else with_interval(shown, *self.ci.get((label, encoder), (None, None)), sep=sep)

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


def build(df: pl.DataFrame, alpha: float, order: list[str] | None = None,
          encoders: list[str] | None = None) -> Table4:
    """The cells of Table 4: d with its marks per (row, encoder). A test whose results differ in
    context, alternative, balance, clustering or p procedure gets a row per variant, labelled
    "test (word, greater)", so that no cell hides another hypothesis. Only WEAT's d: other
    metrics (a `metric` column) have scales of their own."""
    if "metric" in df.columns:
        df = df.filter(df["metric"].fill_null("weat") == "weat")
    if "options" in df.columns and "scoring" not in df.columns:  # a likelihood result's variant (db/036's hypothesis)
        df = df.with_columns(scoring=pl.col("options").cast(pl.String).str.json_path_match("$.variant"))
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
        parts = [v for v in (_variant(c, r[c]) for c in cols) if v]
        label = r["test"] + (f" ({', '.join(parts)})" if parts else "")
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
    if column == "scoring":  # an embedding's result has none
        return f"variant {value}" if value else ""
    return str(value)


def paper(df: pl.DataFrame, alpha: float, fmt: str, caption: str, display_names: dict[str, str] | None = None,
          order: list[str] | None = None, encoders: list[str] | None = None) -> str:
    """Table 4 as LaTeX or Markdown: a row per hypothesis, a column per encoder (display names)."""
    names = display_names if display_names is not None else text.display_names(df)
    return render(build(df, alpha, order, encoders), fmt, caption, names)


def render(t: Table4, fmt: str, caption: str, names: dict[str, str], heads: dict[str, str] | None = None) -> str:
    """Table 4's cells as LaTeX or Markdown, the encoders under their display `names`, each row
    under its head (`heads`: row label -> the test's categories) or its label."""
    heads = heads or {}
    rows = [[heads.get(label, label)] + [t.cell(label, e) or "" for e in t.encoders] for label in t.rows]
    caption = caption + (f" ({t.note}.)" if t.note else "") + (" Brackets: the 95% interval of d." if t.ci else "")
    return render_table(["test", *t.encoders], rows, [False] + [True] * len(t.encoders), fmt, caption,
                        headers={e: names.get(e, e) for e in t.encoders})


@dataclass
class Table4View:
    """The grid: a row per hypothesis under its label (the test, or its categories), a column
    per encoder under its display name; `t4` keeps the numbers behind each cell."""
    columns: list[str]
    rows: list[dict]
    t4: Table4
    names: dict[str, str] = field(default_factory=dict)
    heads: dict[str, str] = field(default_factory=dict)  # row label -> the label shown (categories)

    def cells(self) -> dict[tuple[str, str], str]:
        """(row, column) -> the text a reader sees, for every filled cell."""
        return {(r[self.columns[0]], c): r[c] for r in self.rows for c in self.columns[1:] if r.get(c) is not None}

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema={c: pl.String for c in self.columns}, orient="row")

    def legend(self, correction: str, alpha: float, family) -> str:
        """The marks that appear in the cells (only those), the interval and the row-label note."""
        cells = [v for r in self.rows for k, v in r.items() if k != self.columns[0]]
        return (text.mark_note(correction, alpha, family, cells) + ("; [95% interval of d]" if self.t4.ci else "")
                + (f"; {self.t4.note}" if self.t4.note else ""))


def table4(results: pl.DataFrame, alpha: float, order: list[str] | None = None, encoders: list[str] | None = None,
           names: dict[str, str] | None = None, categories: dict[str, str] | None = None) -> Table4View:
    """Table 4 of a family's corrected results at `alpha`: rows in `order` (then the rest by
    name), encoders in `encoders` order under `names` (default: the results' display names);
    `categories` (test -> "X vs Y / A vs B"): head each row by its test's categories, its label
    beside ("X vs Y / A vs B [weat6 (exact)]")."""
    t4 = build(results, alpha, order, encoders)
    names = names if names is not None else text.display_names(results)
    heads = {}
    if categories:  # the categories, and the row's label (its test, and its variant) so a row keeps its test
        for label in t4.rows:
            test = label.partition(" (")[0]
            if test in categories:
                heads[label] = f"{categories[test]} [{label}]"
    columns, rows = t4.grid(names)
    for row in rows:
        row["test"] = heads.get(row["test"], row["test"])
    return Table4View(columns, rows, t4, names, heads)


def show(view: Table4View, results: pl.DataFrame, family, fmt: str, what: str, summary: str | None = None) -> None:
    """Table 4 printed by a command: on the terminal a legend of the marks it shows (stderr), then
    the grid; as a paper's LaTeX/Markdown table with its caption. `summary` (a run's id): the
    fragile results as a count with the command that lists them (run), else a line each
    (results --table)."""
    if fmt in ("latex", "markdown"):
        cells = [v for r in view.rows for k, v in r.items() if k != view.columns[0]]
        sys.stdout.write(render(view.t4, fmt, text.caption(family, family.correction, family.alpha, what, cells),
                                view.names, view.heads))
        return
    legend = view.legend(family.correction, family.alpha, family)
    err.print(f"Effect size d by test and encoder; {legend}; {family.correction} over all {family.m} rows at alpha "
              f"{family.alpha}; tested: {family.tested}", highlight=False)
    fragile = text.fragile_lines(results)
    if summary:
        if fragile:
            err.print(f"{text.count(len(fragile), 'result')} fragile (the decision flips without one word): "
                      f"`stimkit results --run {summary} --columns test,encoder,d,p_value,flags` lists them",
                      highlight=False)
    else:
        for line in fragile:
            err.print(line, highlight=False)
    grid = view.frame()
    emit(grid, fmt, keep=tuple(grid.columns))  # every encoder's column: names fold, none is dropped


def title(study=None, results: pl.DataFrame | None = None, tests: dict | None = None) -> str:
    """Table 4's title, naming where its numbers come from (views.text.source): the paper's
    table for its own study, else the study."""
    return text.sourced(TITLE, text.source(study, results, tests))


def file_caption(source: str, correction: str, alpha: float, sentence_units: bool, tested: str, m: int,
                 family: str, cells=None) -> str:
    """Table 4's caption in the report's files (tables/table4.md, .tex), which stand alone: each
    mark its `cells` carry explained (None: every mark), the family by its definition (`family`)
    and its size `m`."""
    shown = text.marks_in(cells) if cells is not None else {"*", "**", text.SENTENCES_ONLY, "†"}
    parts = [text.stars_said(shown, correction, alpha)] if shown & {"*", "**"} else []
    if sentence_units and text.SENTENCES_ONLY in shown:
        parts.append(f"{text.SENTENCES_ONLY} significant only with sentences as units (not with whole words, "
                     "same correction)")
    if "†" in shown:
        parts.append(f"† cannot reach p <= {alpha}")
    said = "; ".join(parts) or f"no result significant at p <= {alpha}"
    return f"{text.sourced(TITLE, source)}; {said}. Tested: {tested}. Family: m = {m} hypotheses ({family})."
