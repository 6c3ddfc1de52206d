"""Template audit commands: audit templates, compare, show (parse, call the library, print)."""

from __future__ import annotations

import inspect
from typing import Annotated, Optional

import typer

from .. import DEFAULT_BUDGET, StimkitError
from ..errors import UsageError
from ..output import with_interval
from . import procedure
from .common import (OverrideOption, TemplateDirOption, WordlistDirOption, app, emit, emit_tables, err, format_option, invocation, current_study, study_value,
                     handles_errors, open_store, result_lines)

audit_app = typer.Typer(help="Template audits: how template choice moves d and p.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")


@procedure.takes_procedure
def _audit(
    compare: bool,
    test: Annotated[Optional[list[str]], typer.Option("--test", "-t", help="A test whose sets come from templates: catalog, yours or ad hoc (repeatable; templates: default the sent- Caliskan tests).")] = None,
    template_set: Annotated[Optional[list[str]], typer.Option("--template-set", "-s", help="Template set, built-in or in --template-dir (repeatable; templates: default the test's own; compare: two or more).")] = None,
    wordlist_dir: WordlistDirOption = None,
    template_dir: TemplateDirOption = None,
    override: OverrideOption = False,
    fmt: Annotated[Optional[str], format_option()] = None,
    proc: dict = None,
):
    """Both audit commands, one set of options: `compare` runs each test under each template
    set as plain results; `templates` audits each template of each test."""
    from .encode import progress_for

    command = invocation()
    study = current_study()
    # the procedure as `test` takes it; alpha: typed, else the study's, else the tests' study's (Store.audit)
    encoders = procedure.encoders(study, proc.pop("encoder"), ("minilm",))
    values = procedure.options(study, **proc)
    values = {k: v for k, v in values.items() if k in procedure.KEYS + ("clustered",)}
    alpha = values.pop("alpha", None)
    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        if not compare:
            run_id, _ = store.audit(test, encoders, template_set, alpha, command, _audit_line, progress_for, **values)
            if fmt is not None:  # the audits just stored, as `audit show` prints them
                _show(*store.audits(f"run_id = '{run_id}'", alpha=alpha), fmt)
            err.print(result_lines(f"run {run_id}:", f"see `stimkit audit show --where \"run_id = '{run_id}'\"`"),
                      highlight=False)
            return
        if not test:
            raise UsageError("compare needs the tests to compare: --test/-t (repeatable)")
        alpha = alpha if alpha is not None else store.study_alpha(test)
        run_id, rows = store.audit_compare(test, list(template_set or []), encoders, alpha, command,
                                           progress_for, **values)
    emit(rows, fmt, title=f"d and p by template set (shift and flips against {template_set[0]}; alpha {alpha})",
         keep=("d", "ci_low", "ci_high", "p", "significant"))
    err.print(f"run {run_id}", highlight=False)


def _audit_line(a) -> None:
    pooled = (f"n/a ({a.pooled_note or 'no crossed model'})" if a.pooled_d is None else
              f"{with_interval(f'{a.pooled_d:+.2f}', a.ci_low, a.ci_high)} tau2={a.tau2:.3f} I2={a.i2:.0%}")
    flips = "n/a" if a.decision_flip_share is None else f"{a.decision_flip_share:.0%}"
    err.print(result_lines(f"{a.test}  {a.template_set}  {a.encoder}",
                           f"full test d={with_interval(f'{a.full_d:+.2f}', *a.full_ci)} p={a.full_p:.2g} "
                           f"templates={a.n_templates}",
                           f"pooled d={pooled} decision flips at alpha {a.alpha:g}={flips}"), highlight=False)


def _register(name: str, compare: bool, doc: str) -> None:
    """An audit subcommand: `_audit` with `compare` fixed (its options shown without it)."""
    def command(**options):
        return _audit(compare, **options)

    signature = inspect.signature(_audit, eval_str=True)  # the annotations are strings (from __future__)
    command.__signature__ = signature.replace(parameters=[p for n, p in signature.parameters.items() if n != "compare"])
    command.__doc__, command.__name__ = doc, f"audit_{name}_cmd"
    audit_app.command(name)(handles_errors(command))


_register("templates", False, """Per template: the test alone and left out; pooled d over words x templates; flip rates; word influence.

    Examples:
      stimkit audit templates -t sent-weat6 -e minilm -e use-m3
      stimkit audit templates -t sent-weat6 -s may2019 -s past_tense
    """)
_register("compare", True, """Run the same test under each template set and show how d and p move (rows go to `results`).

    Example:
      stimkit audit compare -t sent-weat6 -e use-m3 -s may2019 -s may2019_fixed -s word_first
    """)


@audit_app.command("show")
@handles_errors
def audit_show_cmd(
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `audits`.")] = None,
    top: Annotated[int, typer.Option("--top", help="Templates listed per audit.")] = 3,
    movers: Annotated[bool, typer.Option("--templates", help="Only the templates that move each test most.")] = False,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Decision flips at this alpha, recomputed from the stored p (default: the study's, else each audit's own).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """A summary of audits: pooled d, tau2, I2, flip rates, and the templates that move each test most.

    Both tables in every format: JSON is one document {"rows": [the audits], "templates": [...]};
    csv and tsv print the audits, a blank line, then the templates, each with its header line;
    ndjson and parquet name each row's table in a `table` column. --templates: the templates alone.

    Examples:
      stimkit audit show --top 3
      stimkit audit show --templates --format csv
    """
    alpha = alpha if alpha is not None else study_value("alpha")
    with open_store(read_only=True) as store:
        audits, movers_df = store.audits(where, top, alpha)
    if audits.height == 0:
        raise StimkitError("no audits" + (f" where {where}" if where else "") + " (run `stimkit audit templates`)")
    _show(audits, movers_df, fmt, movers)


TEMPLATES_TITLE = "Templates that move each test most (alone: those that flip the decision first, then by |d_alone - d|)"
KEEP_TEMPLATES = {"keep": ("d_alone", "decision_flip")}  # what a narrow terminal never drops


def _show(audits, movers_df, fmt, movers_only: bool = False) -> None:
    """The audits and the templates that move each most, both in every format (or the templates alone)."""
    if movers_only:
        emit(movers_df, fmt, title=TEMPLATES_TITLE, **KEEP_TEMPLATES)
    else:
        emit_tables({"audits": audits.drop("audit_id"), "templates": movers_df}, fmt,
                    titles={"audits": "Template audits: the full test, the pooled d over its templates, flip rates "
                                      f"at alpha {', '.join(sorted({f'{a:g}' for a in audits['alpha']}))}",
                            "templates": TEMPLATES_TITLE}, options={"templates": KEEP_TEMPLATES})
