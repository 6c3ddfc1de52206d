"""The report command: a self-contained HTML report with figures and tables, from the store (read-only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..choices import CORRECTIONS, REPORT_FORMATS, check_choice, choices
from .common import app, check_alpha, check_correction, count, current_study, err, handles_errors, open_store, out


@app.command("report")
@handles_errors
def report_cmd(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Output folder (refused if not empty, unless --force).")] = Path("report"),
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `results` choosing the family (default: as `stimkit results`).")] = None,
    correct: Annotated[Optional[str], typer.Option("--correct", help=f"Multiple-testing correction: {choices(CORRECTIONS)} (default: the study's whose runs make the family, else holm).")] = None,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Significance level, in (0, 1) (default: the study's, else 0.01).")] = None,
    fmt: Annotated[Optional[list[str]], typer.Option("--format", help=f"{choices(REPORT_FORMATS)} (repeatable; default: all).")] = None,
    test: Annotated[Optional[list[str]], typer.Option("--test", "-t", help="Add a strip plot of s(w) for this test (repeatable).")] = None,
    audit: Annotated[bool, typer.Option("--audit", help="Add template-audit forest plots (of the --test tests, or all).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace the report in a non-empty output folder.")] = False,
):
    """Write DIR/report.html (figures inline, no network), DIR/figures/* and DIR/tables/* (Table 4 as markdown, LaTeX, CSV).

    With a study in force (--study, $STIMKIT_STUDY, or study.toml found from here up): its
    latest run where the store has one, else the whole family, at its alpha and correction."""
    if correct is not None:
        check_correction(correct)
    if alpha is not None:
        check_alpha(alpha)
    for f in fmt or ():
        check_choice(f, REPORT_FORMATS, "--format", "format")
    study = in_force = current_study()
    with open_store(read_only=True) as store:
        if study is not None and not store.has_study_run(study):  # tests run one by one in the study's folder
            correct, alpha = correct or study.correction, alpha if alpha is not None else study.alpha
            study = None
        written = store.report(out_dir, where, correct, alpha, fmt, test, audit, force, study,
                               display=getattr(in_force, "display", None), heads=getattr(in_force, "heads", None),
                               baseline=getattr(in_force, "baseline_key", None))
    for note in written.notes:
        err.print(note, highlight=False, markup=False)
    err.print(f"{count(len(written.figures), 'figure file')}, {count(len(written.tables), 'table')} in {out_dir}", highlight=False)
    out.print(str(written.html or out_dir / "figures"), highlight=False)
