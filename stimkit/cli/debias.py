"""Debiasing commands: debias check (is the bias recoverable; what did it cost), debias compare
(every test before and after, in one table)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, List, Optional

import typer

from . import procedure
from .common import app, current_study, emit, err, format_option, handles_errors, invocation, open_store

debias_app = typer.Typer(help="Debiased encoders (`-e \"glove-6b-50d,debias=hard\"`): recoverability checks, "
                              "before and after.", no_args_is_help=True)
app.add_typer(debias_app, name="debias")

CHECK_COLUMNS = ["check", "before", "before_low", "before_high", "after", "after_low", "after_high", "chance", "n",
                 "protocol", "items"]
COMPARE_COLUMNS = ["test", "encoder", "d", "d_low", "d_high", "p", "change", "change_low", "change_high", "change_p"]


def _frame(rows, columns):
    import polars as pl

    return pl.DataFrame([asdict(r) for r in rows]).select(columns) if rows else pl.DataFrame({c: [] for c in columns})


@debias_app.command("check")
@handles_errors
def check_cmd(
    encoder: Annotated[Optional[List[str]], typer.Option("--encoder", "-e", help="A debiased encoder spec (repeatable), "
                                                                                 "e.g. \"glove-6b-50d,debias=hard\" "
                                                                                 "(default: the study's debiased encoders).")] = None,
    n: Annotated[int, typer.Option("--n", help="Most biased words of each side that k-means clusters, 2 to 2,500 "
                                               "(STIMKIT_MAX_DEBIAS_WORDS) (Gonen & Goldberg: 500; fewer if the "
                                               "vocabulary has fewer).")] = 500,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of k-means, the bootstrap and the classifier's split "
                                                               "(default: the study's, else 0).")] = None,
    resamples: Annotated[int, typer.Option("--resamples", help="Bootstrap resamples of the clustering interval, 10 to "
                                                               "10,000 (STIMKIT_MAX_RESAMPLES).")] = 200,
    protocol: Annotated[str, typer.Option("--protocol", help="gonen-goldberg (words ranked by cos(w, he) - cos(w, she), "
                                          "RBF SVM, share of male-biased neighbours) or projection (stimkit's first: "
                                          "ranked on the removed direction, for comparison).")] = "gonen-goldberg",
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Gonen & Goldberg's (2019) checks of a debiased encoder, on the base and after: k-means
    accuracy of the most biased words (by cos(w, he) - cos(w, she)), an RBF SVM's held-out
    accuracy (and a linear one's), the correlation of a word's original bias with the share of
    male-biased words among its 100 neighbours; and what it cost: Spearman rho on
    WordSim-353 and SimLex-999 (and neighbour overlap for a sentence encoder). Each with its
    95% interval (of the debiased figure in after_low/after_high) and chance level. Stored
    (`debias_checks`) with the run, its study, alpha and correction.

        stimkit debias check -e "glove-6b-50d,debias=hard"
    """
    proc = procedure.resolve(current_study(), {"seed": seed, "encoder": encoder}, ())
    with open_store() as store:
        run_id, found = store.debias_check(n=n, resamples=resamples, command=invocation(), procedure=proc,
                                           protocol=protocol)
    for spec, rows in found.items():
        emit(_frame(rows, CHECK_COLUMNS), fmt, title=spec)
    err.print(f"run {run_id}", highlight=False)


@debias_app.command("compare")
@handles_errors
def compare_cmd(
    tests: Annotated[List[str], typer.Argument(help="Tests (names or patterns), e.g. weat6 weat7 weat8.")],
    encoder: Annotated[Optional[List[str]], typer.Option("--encoder", "-e", help="A debiased encoder spec (repeatable; "
                                                                                 "its base runs too; default: the "
                                                                                 "study's debiased encoders).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the tests' permutations (default: the study's, "
                                                               "else 0).")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Permutation sample budget, 2 to 10,000,000 "
                                                                   "(STIMKIT_MAX_BUDGET) (default: the study's, else "
                                                                   "100,000).")] = None,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Significance level (default: the study's, else "
                                                                   "0.01).")] = None,
    figure: Annotated[Optional[str], typer.Option("--figure", help="Also draw d before and after with the change "
                                                                   "to this file (.png, .svg, .pdf).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Each test on the base encoder and on each debiased one, in one run: d, its interval and p
    side by side, and on a debiased row the change in d from the base with its interval and p
    (paired by stimulus: a jackknife deleting a target word from both results at once). Inside
    a study its procedure applies (seed, budget, units, alpha, per-test options). The results
    are stored apart from the tests' (`results --kind debias`): exploratory, they change no
    family of the study.

        stimkit debias compare weat6 weat7 weat8 -e "glove-6b-50d,debias=hard" -e "glove-6b-50d,debias=inlp"
    """
    proc = procedure.resolve(current_study(), {"seed": seed, "budget": budget, "alpha": alpha, "encoder": encoder}, ())
    with open_store() as store:
        report, rows = store.debias_compare(list(tests), command=invocation(), procedure=proc)
    err.print(f"run {report.run_id}: {len(report.results)} results (see `stimkit results --kind debias`)",
              highlight=False)
    emit(_frame(rows, COMPARE_COLUMNS), fmt)
    if figure:
        from ..report.debias import before_after_figure

        before_after_figure(rows).savefig(figure)
        err.print(f"wrote {figure}", highlight=False)
