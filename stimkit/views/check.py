"""`stimkit check` printed: the consistency checks over a family with their verdicts, and how
the association metrics agree (--metrics)."""

from __future__ import annotations

import polars as pl

from .emit import MACHINE_FORMATS, emit, emit_document, emit_tables, err
from .results import choose_columns
from .text import SENTENCES_ONLY_NOTE, count, family_line

# at 80 columns a verdict keeps what it is about, the figures it rests on (detail: d, p) and
# why (reason, under the verdict where it must); the procedure's columns go first
KEEP = ("check_name", "encoder", "tests", "verdict", "detail")
ORDER = ("check_name", "encoder", "tests", "verdict", "detail", "reason", "diff_p", "test_used", "heuristic")
DROP_FIRST = ("heuristic", "test_used", "diff_p")
STACK = {"reason": "verdict"}


def show(df: pl.DataFrame, family, fmt: str, columns: str | None = None, wide: bool = False,
         verbose: bool = False) -> None:
    """Every comparison with its verdict (json: one document with the counts), then the counts
    and the family on stderr."""
    alpha = family.alpha
    n = {v: int((df["verdict"] == v).sum()) for v in ("violation", "note", "not comparable")} if df.height else {}
    summary = (f"{count(df.height, 'comparison')}, {count(n.get('violation', 0), 'violation')} (tested), "
               f"{count(n.get('note', 0), 'note')}, {n.get('not comparable', 0)} not comparable; "
               f"{family_line(family, verbose=verbose)}; at alpha {alpha} ({family.settings}); {family.tested}")
    if df.height and df["detail"].str.contains(r"\^", literal=False).any():
        summary += f"\n{SENTENCES_ONLY_NOTE.format(alpha=alpha)}"
    # the ids of the results compared are for programs (and --columns); a person reads the rest
    reading = None if wide or fmt in MACHINE_FORMATS else [c for c in df.columns if c != "result_ids"]
    chosen = choose_columns(df, columns, reading)
    if fmt == "json":
        emit_document({"family": family.as_dict(), "alpha": alpha, "comparisons": df.height,
                       "violations": n.get("violation", 0), "notes": n.get("note", 0)}, df, fmt, chosen)
    elif df.height:
        emit(df, fmt, chosen, keep=KEEP, drop_first=DROP_FIRST, stack=STACK, order=ORDER)
    err.print(summary, highlight=False)


def show_metrics(agreement: pl.DataFrame, tau: pl.DataFrame, family, fmt: str | None) -> None:
    """Sign and decision of each metric per test and encoder, and Kendall's tau between metrics."""
    emit_tables({"agreement": agreement, "kendall_tau": tau}, fmt, meta={"family": family.as_dict(), "alpha": family.alpha},
                titles={"agreement": "Sign and decision of each metric, per test and encoder",
                        "kendall_tau": "Kendall's tau between metrics (bias strength over the family's tests and encoders)"},
                options={"agreement": {"keep": ("signs_agree", "decisions_agree")}})
    err.print(f"{count(agreement.height, 'test-encoder pair')} compared across metrics; m = {family.m}", highlight=False)
