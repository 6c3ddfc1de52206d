"""The results as a person reads them (`stimkit results`) and as a paper prints them.

- `results_view`: the results with the columns a person reads (`d`, `ci`, `n`, `flags`,
  `crossed`) added, and the default column sets: what a terminal shows first, what it never
  drops, what it drops first.
- `paper_table`: chosen columns as LaTeX (booktabs) or Markdown, numbers rounded (d to two
  decimals with its CI and May et al.'s marks, p to three decimals or "<0.001"), encoders under
  their display names, and a caption.
- `sentbias_rows`: the original SEAT code's results.tsv layout.
- `show`: all of it printed, in the format asked for; a table with each replicate family's
  summary after its replicates' rows (`with_summaries`: a description, not a hypothesis).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..plain import Rows
from . import text
from .emit import MACHINE_FORMATS, emit, emit_document, err
from .paper import render_table
from .text import flags, fmt_d, fmt_p, interval_text, marks, n_text, with_interval

# results: what a terminal shows (in reading order), never drops, and drops first to fit
READ_COLUMNS = ("test", "encoder", "context", "language", "d", "ci", "p_value", "p_adjusted", "rejected", "n", "flags")
KEEP_COLUMNS = ("test", "encoder", "d", "p_value", "rejected")
# what a narrow terminal keeps longest, most important first: who (test, encoder), d with its
# interval, p, the decision; then the findings (n, the matched baseline, the flags); the
# adjusted p goes under p and the interval under d (STACK) before any finding is left out
ORDER = ("test", "encoder", "d", "ci", "p_value", "rejected", "n", "baseline_percentile", "baseline_fpr", "flags",
         "p_adjusted", "context", "language")
DROP_FIRST = ()
BASELINE_COLUMNS = ("baseline_percentile", "baseline_fpr")  # shown where some result has a matched baseline
# a narrow terminal shows these under another column rather than leave them out
STACK = {"p_adjusted": "p_value", "flags": "test", "baseline_fpr": "baseline_percentile", "ci": "d", "n": "test"}
ROWS_FORMATS = ("table", "csv", "tsv")  # what `show` prints from plain.Rows; the rest from a polars frame
PAPER_COLUMNS = ("test", "encoder", "context", "d", "p_value", "p_adjusted", "n")
SENTBIAS_COLUMNS = ["model", "options", "test", "p_value", "effect_size", "num_targ1", "num_targ2", "num_attr1", "num_attr2"]
SEAT_NAMES = {"n_x": "num_targ1", "n_y": "num_targ2", "n_a": "num_attr1", "n_b": "num_attr2"}

if TYPE_CHECKING:  # a reading that prints plain.Rows never builds a frame (views.emit)
    import polars as pl

    Frame = pl.DataFrame | Rows


def has_ci(df: Frame) -> bool:
    return "ci_low" in df.columns and "ci_high" in df.columns and any(v is not None for v in df["ci_low"])


def results_view(df: Frame) -> Frame:
    """`df` (a polars frame or plain.Rows) with `d` (= effect_size), `ci` ("[low, high]" where a
    bootstrap CI exists), `n` ("n_x/n_y/n_a/n_b") and `crossed` (crossed d with its interval,
    where one was estimated) added; every original column stays, for --columns and machine formats."""
    extra = {}  # name: (values, DuckDB type)
    if "effect_size" in df.columns and "d" not in df.columns:
        extra["d"] = df["effect_size"], "DOUBLE"
    if has_ci(df) and "ci" not in df.columns:
        extra["ci"] = [interval_text(lo, hi) or None for lo, hi in zip(df["ci_low"], df["ci_high"])], "VARCHAR"
    if {"n_x", "n_y", "n_a", "n_b"} <= set(df.columns) and "n" not in df.columns and df.height:
        extra["n"] = [n_text(r) for r in df.iter_rows(named=True)], "VARCHAR"
    if "flags" not in df.columns and df.height:
        extra["flags"] = [flags(r) or None for r in df.iter_rows(named=True)], "VARCHAR"
    if "crossed_d" in df.columns and "crossed" not in df.columns and any(d is not None for d in df["crossed_d"]):
        # words and templates as random factors (stats.crossed): "+0.62 [-0.10, 1.25]", for --columns and --wide
        extra["crossed"] = [None if d is None else with_interval(f"{d:+.2f}", lo, hi) for d, lo, hi
                            in zip(df["crossed_d"], df["crossed_ci_low"], df["crossed_ci_high"])], "VARCHAR"
    if isinstance(df, Rows):
        for name, (values, type_) in extra.items():
            df = df.with_column(name, values, type_)
        return df
    if not extra:
        return df
    import polars as pl

    return df.with_columns(pl.col("effect_size").alias(name) if name == "d" else pl.Series(name, values, dtype=pl.String)
                           for name, (values, _) in extra.items())


def read_columns(df: Frame) -> list[str]:
    """The default terminal columns present in `df` (`ci` only where a CI exists; `language`
    only where a result is not in English; the baseline's only where some result has one)."""
    english = "language" not in df.columns or all(v == "en" for v in df["language"] if v is not None)
    shown = [c for c in READ_COLUMNS if c in df.columns and not (c == "language" and english)]
    return shown + [c for c in BASELINE_COLUMNS if c in df.columns and any(v is not None for v in df[c])]


def choose_columns(df: Frame, spec: str | None, default: list[str] | None) -> list[str] | None:
    """`--columns a,b,c` checked against `df` (a usage error names the unknown ones and the known);
    without it, `default` (None: every column)."""
    if not spec:
        return default
    names = [c.strip() for c in spec.split(",") if c.strip()]
    unknown = [c for c in names if c not in df.columns]
    if unknown:
        raise UsageError(f"--columns: no column {', '.join(map(repr, unknown))} (known: {', '.join(df.columns)})")
    return names


def _cell(row: dict, column: str, alpha: float, names: dict[str, str], ci_in_d: bool) -> str:
    value = row.get(column)
    if column == "d":
        shown = fmt_d(value) + marks(row, alpha)
        return with_interval(shown, row.get("ci_low"), row.get("ci_high")) if ci_in_d else shown
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
    names = display_names if display_names is not None else text.display_names(view)
    ci_in_d = "ci" not in columns
    rows = [[_cell(r, c, alpha, names, ci_in_d) for c in columns] for r in view.iter_rows(named=True)]
    numeric = [c in ("d", "p_value", "p_adjusted") or view.schema[c].is_numeric() for c in columns]
    return render_table(columns, rows, numeric, fmt, caption)


def sentbias_rows(df: pl.DataFrame) -> pl.DataFrame:
    """The original SEAT code's results.tsv layout (its column names, and `options`: the
    encoder's options), so its analysis scripts read it. Only this format renames."""
    import polars as pl

    options = pl.col("encoder").str.splitn(",", 2).struct.field("field_1").fill_null("").str.replace_all(",", ";")
    return df.rename(SEAT_NAMES).with_columns(options=options).select(SENTBIAS_COLUMNS)


SUMMARY_LEGEND = ("a row under a family's encoder ({names}) sums up the replicate rows above it: d their median, "
                  "ci their 2.5-97.5% interval, flags the share of replicates with p <= the run's alpha; "
                  "not a hypothesis (no p, not in m)")


def summary_cells(s: dict) -> dict:
    """A replicate family's summary (analysis.replicates.summaries) as a results row's cells."""
    share = s.get("share_holding")
    return {"test": s["test"], "encoder": s["encoder"], "context": s.get("context"), "effect_size": s["d_median"],
            "d": s["d_median"], "ci_low": s["d_low"], "ci_high": s["d_high"],
            "ci": interval_text(s["d_low"], s["d_high"]) or None, "alternative": s.get("alternative"),
            "n": f"{s['n_replicates']} replicates",
            "flags": None if share is None else f"holds in {share:.0%} (p <= {s['alpha']:g})"}


def with_summaries(view: Frame, summaries: list[dict]) -> Frame:
    """The rows with each family's summary placed after the last of its replicates' rows (by
    result_id; after every row where none is shown); cells the summary has not stay empty."""
    if not summaries or "result_id" not in view.columns:
        return view
    rows = list(view.iter_rows(named=True))
    at = {r["result_id"]: i for i, r in enumerate(rows)}
    placed = sorted(((max((at[i] for i in s["member_ids"] if i in at), default=len(rows) - 1), n, s)
                     for n, s in enumerate(summaries)), key=lambda t: (t[0], t[1]))
    out, k = [], 0
    for i, row in enumerate(rows):
        out.append(row)
        while k < len(placed) and placed[k][0] <= i:
            cells = summary_cells(placed[k][2])
            out.append({c: cells.get(c) for c in view.columns})
            k += 1
    out += [{c: summary_cells(p[2]).get(c) for c in view.columns} for p in placed[k:]]
    if isinstance(view, Rows):
        return Rows(view.columns, view.types, tuple(tuple(r[c] for c in view.columns) for r in out))
    import polars as pl

    return pl.DataFrame(out, schema=view.schema)


def show(df: Frame, family, fmt: str, columns: str | None = None, wide: bool = False,
         summaries: list[dict] | None = None) -> None:
    """`stimkit results` printed: a paper's table (latex, markdown: rounded, d with its marks, a
    caption with the family), the original SEAT code's layout (sentbias), one json document
    with the family, or the rows (a terminal table: the reading columns, the decision's legend on
    stderr; csv and the other machine formats: every column unless --columns). plain.Rows
    print as a table, csv or tsv (ROWS_FORMATS); the other formats take a polars frame."""
    correct, alpha = family.correction, family.alpha
    if fmt == "sentbias":
        sys.stdout.write(sentbias_rows(df).write_csv(separator="\t", quote_style="never"))
        return
    view = results_view(df) if fmt not in MACHINE_FORMATS or columns else df
    chosen = choose_columns(view, columns, None if wide or fmt in MACHINE_FORMATS else
                            list(PAPER_COLUMNS if fmt in ("latex", "markdown") else read_columns(view)))
    if fmt in ("latex", "markdown"):
        sys.stdout.write(paper_table(df, chosen or list(view.columns), fmt, text.caption(family, correct, alpha),
                                     text.display_names(df), alpha=alpha))
    elif fmt == "json":
        meta = {"family": family.as_dict(), "correction": {"method": correct, "alpha": alpha}}
        if summaries:  # a replicate family's summaries: not hypotheses, so beside the rows, not among them
            meta["replicate_summaries"] = [{k: v for k, v in s.items() if k != "created_at"} for s in summaries]
        emit_document(meta, view, fmt, chosen)
    else:
        if fmt == "table":  # d carries no marks here: the decision is its own column
            err.print(f"rejected: adjusted p <= {alpha} ({correct}); tested: {family.tested} ({family.settings})",
                      highlight=False)
            if summaries:   # machine formats keep one row per hypothesis (`stimkit replicates` has the rest)
                view = with_summaries(view, summaries)
                err.print(SUMMARY_LEGEND.format(names=", ".join(dict.fromkeys(s["encoder"] for s in summaries))),
                          highlight=False)
        emit(view, fmt, chosen, keep=KEEP_COLUMNS, drop_first=DROP_FIRST, stack=STACK, order=ORDER)
