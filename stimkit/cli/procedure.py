"""The procedure's options, declared once: `test`, `baseline` and `audit` take the same
options with the same help, grouped in panels (what to test, the procedure, output).

Every option defaults to None: the CLI passes on only what the user typed; the library resolves
it over the study's keys (run.options.procedure, `resolve` here) and owns the defaults."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .. import DEFAULT_BUDGET
from ..choices import ALTERNATIVES, BALANCE_POLICIES, P_METHODS, UNITS, choices

WHAT = "What to test"
PROCEDURE = "The procedure"
OUTPUT = "Output"

EncoderOption = Annotated[Optional[list[str]], typer.Option(
    "--encoder", "-e", help="Encoder spec (repeatable; default: the study's, else glove-6b-50d).", rich_help_panel=WHAT)]
BudgetOption = Annotated[Optional[int], typer.Option(
    "--budget", help=f"Permutation sample budget, 2 to 10,000,000 (STIMKIT_MAX_BUDGET) (default: the study's, else "
                     f"{DEFAULT_BUDGET:,}).",
    rich_help_panel=PROCEDURE)]
MethodOption = Annotated[Optional[str], typer.Option(
    "--method", help=f"p-value procedure: {choices(P_METHODS)} (default: auto).", rich_help_panel=PROCEDURE)]
AlternativeOption = Annotated[Optional[str], typer.Option(
    "--alternative", help=f"{choices(ALTERNATIVES)} (default: the test's own, else greater).", rich_help_panel=PROCEDURE)]
SeedOption = Annotated[Optional[int], typer.Option(
    "--seed", help="Seed of the permutation samples and bootstrap draws, never of the cut (default: the study's, else 0).",
    rich_help_panel=PROCEDURE)]
UnitsOption = Annotated[Optional[str], typer.Option(
    "--units", help=f"{choices(UNITS)}: what a sentence test's permutation moves (default: the test's own, else words: "
                    "whole words with their sentences; the published tests: sentences). A word test's unit is the word.",
    rich_help_panel=PROCEDURE)]
VariantOption = Annotated[Optional[str], typer.Option(
    "--variant", help="A likelihood test's scoring variant, of kind text (queries/likelihood: sum, mean, pll, aul, or "
                      "a study's own) (default: the study's, else sum; pll on a masked LM).", rich_help_panel=PROCEDURE)]
# the old name of --units words: accepted, not shown
ClusteredOption = Annotated[bool, typer.Option("--clustered", hidden=True, help="--units words.")]
BalanceOption = Annotated[Optional[str], typer.Option(
    "--balance", help=f"{choices(BALANCE_POLICIES)} (default: the test's).", rich_help_panel=PROCEDURE)]
CutSeedOption = Annotated[Optional[int], typer.Option(
    "--cut-seed", help="Which items balance=cut drops (default 0: fixed per test).", rich_help_panel=PROCEDURE)]
AlphaOption = Annotated[Optional[float], typer.Option(
    "--alpha", help="Significance level, in (0, 1) (default: the study's, else 0.01).", rich_help_panel=PROCEDURE)]


def resolve(study, proc: dict, fallback=("glove-6b-50d",)):
    """The bundle's values as the user typed them (`proc`, encoder included), resolved by the
    library's one resolver (run.options.procedure) against the study in force."""
    from ..run.options import procedure

    typed = dict(proc)
    return procedure(study, {k: v for k, v in typed.items() if k != "encoder"}, typed.get("encoder"), fallback)


# The bundle: (parameter, its option, its default), in the order the help lists them.
BUNDLE = (("encoder", EncoderOption, None), ("budget", BudgetOption, None), ("method", MethodOption, None),
          ("alternative", AlternativeOption, None), ("seed", SeedOption, None), ("units", UnitsOption, None),
          ("clustered", ClusteredOption, False), ("variant", VariantOption, None), ("balance", BalanceOption, None), ("cut_seed", CutSeedOption, None),
          ("alpha", AlphaOption, None))


def takes_procedure(fn):
    """A command that takes the procedure's options: they are added to its parameters (Typer
    reads the signature) and reach it as one dict, `proc` (parameter -> what the user typed)."""
    import functools
    import inspect

    signature = inspect.signature(fn, eval_str=True)  # the annotations are strings (from __future__)
    own = [p for name, p in signature.parameters.items() if name != "proc"]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=option)
             for name, option, default in BUNDLE]

    @functools.wraps(fn)
    def command(*args, **kwargs):
        return fn(*args, proc={name: kwargs.pop(name) for name, _, _ in BUNDLE}, **kwargs)

    command.__signature__ = signature.replace(parameters=own + added)
    return command
