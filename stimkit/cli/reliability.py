"""`stimkit reliability` (computes and stores Du et al.'s reliability of chosen results) and
`stimkit replicates` (reads the stored summaries of replicate families): parse, call, print."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import (WideOption, app, current_study, db_path, err, format_option, handles_errors, invocation,
                     open_store)

ReplicateOption = Annotated[Optional[list[str]], typer.Option(
    "--replicate", help="NAME=SPEC: one replicate of the family `replicates:NAME` (repeat it, once a replicate; a "
                        "study's [replicates] table names them too).")]


def named_families(values: list[str] | None) -> dict[str, list[str]]:
    """The study's [replicates] families with the --replicate ones over them."""
    from ..run.replicates import parse_named

    study = current_study()
    return {**(study.replicates if study is not None else {}), **parse_named(values or [])}


@app.command("reliability")
@handles_errors
def reliability_cmd(
    encoder: Annotated[Optional[list[str]], typer.Option(
        "--encoder", "-e", help="Only these encoders' results; a family (trained:NAME, replicates:NAME) stands for its "
                                "replicates and its seeds are the raters of test-retest (default: every encoder of "
                                "the selection, each a seed).")] = None,
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on the results (as `results --where`).")] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="One run's results (a run id, or `latest`).")] = None,
    replicate: ReplicateOption = None,
    level: Annotated[float, typer.Option("--level", help="Confidence level of the intervals.")] = 0.95,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split-half's random splits.")] = 0,
    fmt: Annotated[Optional[str], format_option()] = None,
    wide: WideOption = False,
):
    """Reliability of the chosen results in Du et al.'s (2021) terms, each with its interval:
    test-retest ICC(2,1) and ICC(2,k) across seeds (subjects: the test's target words, each
    word's s(w)); inter-rater ICC(3,1) across scoring rules (subjects: the results every rule
    scored, each rule standardised); internal consistency, Cronbach's alpha and split-half
    (Spearman-Brown) across the words of each target list (subjects: the results).

    Computed from the stored results (their per-word scores, result_items) and stored (a run
    of its own; `stimkit query "SELECT * FROM reliability_results"` reads them again): this
    command writes, as `test` does.

    Examples:
      stimkit reliability -e trained:inaugural
      stimkit reliability --where "test = 'weat6'" --run latest
    """
    from ..views.replicates import show_reliability

    with open_store() as store:
        run_id, df = store.reliability(where, run, encoder, named_families(replicate), level, seed, invocation())
    show_reliability(df, fmt, wide)
    err.print(f"run {run_id}: {df.height} coefficient{'s' if df.height != 1 else ''} stored", highlight=False)


@app.command("replicates")
@handles_errors
def replicates_cmd(
    encoder: Annotated[Optional[str], typer.Option("--encoder", "-e", help="One family (trained:NAME, replicates:NAME).")] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="One run's summaries.")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
    wide: WideOption = False,
):
    """The stored summaries of tests over replicate families (`test -e trained:NAME`), newest
    first: d's median and 2.5-97.5% interval over the replicates, the share of replicates whose
    own test rejects at the run's alpha, the seeds' and the bootstrap samples' spread, and the
    variance of s(w) split into words, templates and replicates. Reads only.

    Examples:
      stimkit replicates -e trained:inaugural
    """
    from ..errors import UsageError
    from ..views.replicates import show_summaries

    if not db_path().exists():
        raise UsageError(f"no store at {db_path()}")
    with open_store(read_only=True) as store:
        df = store.replicate_summaries(run, encoder)
    show_summaries(df, fmt, wide)
