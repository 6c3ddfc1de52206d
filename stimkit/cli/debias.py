"""Debiasing commands: debias check (is the bias recoverable; what did it cost), debias compare
(every test before and after, in one table)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, List, Optional

import typer

from .common import app, emit, err, format_option, handles_errors, open_store

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
    encoder: Annotated[List[str], typer.Option("--encoder", "-e", help="A debiased encoder spec (repeatable), "
                                                                       "e.g. \"glove-6b-50d,debias=hard\".")],
    n: Annotated[int, typer.Option("--n", min=2, help="Most biased words of each side that k-means clusters "
                                                      "(Gonen & Goldberg: 500; fewer if the vocabulary has fewer).")] = 500,
    seed: Annotated[int, typer.Option("--seed", help="Seed of k-means, the bootstrap and the classifier's split.")] = 0,
    resamples: Annotated[int, typer.Option("--resamples", min=10, help="Bootstrap resamples of the clustering interval.")] = 200,
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
    95% interval (of the debiased figure in after_low/after_high) and chance level. Reads no
    store and writes nothing.

        stimkit debias check -e "glove-6b-50d,debias=hard"
    """
    from ..api import debias_checks

    for spec, rows in debias_checks(list(encoder), n, seed, resamples, protocol).items():
        emit(_frame(rows, CHECK_COLUMNS), fmt, title=spec)


@debias_app.command("compare")
@handles_errors
def compare_cmd(
    tests: Annotated[List[str], typer.Argument(help="Tests (names or patterns), e.g. weat6 weat7 weat8.")],
    encoder: Annotated[List[str], typer.Option("--encoder", "-e", help="A debiased encoder spec (repeatable); "
                                                                       "its base runs too.")],
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the tests' permutations.")] = None,
    figure: Annotated[Optional[str], typer.Option("--figure", help="Also draw d before and after with the change "
                                                                   "to this file (.png, .svg, .pdf).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Each test on the base encoder and on each debiased one, in one run: d, its interval and p
    side by side, and on a debiased row the change in d from the base with its interval and p
    (paired by stimulus: a jackknife deleting a target word from both results at once).

        stimkit debias compare weat6 weat7 weat8 -e "glove-6b-50d,debias=hard" -e "glove-6b-50d,debias=inlp"
    """
    options = {"seed": seed} if seed is not None else {}
    with open_store() as store:
        report, rows = store.debias_compare(list(tests), list(encoder), **options)
    err.print(f"run {report.run_id}: {len(report.results)} results", highlight=False)
    emit(_frame(rows, COMPARE_COLUMNS), fmt)
    if figure:
        from ..report.debias import before_after_figure

        before_after_figure(rows).savefig(figure)
        err.print(f"wrote {figure}", highlight=False)
