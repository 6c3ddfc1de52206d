"""Template audit commands: audit templates, compare, show (parse, call the library, print)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .. import DEFAULT_BUDGET, StimkitError
from .common import OverrideOption, TemplateDirOption, WordlistDirOption, app, emit, emit_document, err, format_option, handles_errors, open_store, out

audit_app = typer.Typer(help="Template audits: how template choice moves d and p.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")


EncoderOption = Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoder (repeatable; default: minilm).")]
AuditAlpha = Annotated[float, typer.Option("--alpha", help="Significance level for decision flips, in (0, 1).")]
BudgetOption = Annotated[int, typer.Option("--budget", help="Permutation sample budget.")]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the permutation samples.")]


@audit_app.command("templates")
@handles_errors
def audit_templates_cmd(
    test: Annotated[Optional[list[str]], typer.Option("--test", "-t", help="A test whose sets come from templates: catalog, yours or ad hoc (repeatable); default: the sent- Caliskan tests.")] = None,
    encoder: EncoderOption = None,
    template_set: Annotated[Optional[list[str]], typer.Option("--template-set", "-s", help="Template set, built-in or in --template-dir (repeatable; default: the test's own).")] = None,
    alpha: AuditAlpha = 0.01,
    budget: BudgetOption = DEFAULT_BUDGET,
    seed: SeedOption = 0,
    wordlist_dir: WordlistDirOption = None,
    template_dir: TemplateDirOption = None,
    override: OverrideOption = False,
):
    """Per template: the test alone and left out, a random-effects meta-analysis, flip rates, word influence.

    Examples:
      stimkit audit templates -t sent-weat6 -e minilm -e use-m3
      stimkit audit templates -t sent-weat6 -s may2019 -s past_tense
    """

    def line(a):
        pooled = "n/a" if a.pooled_d is None else f"{a.pooled_d:+.2f} tau2={a.tau2:.3f} I2={a.i2:.0%}"
        flips = "n/a" if a.decision_flip_share is None else f"{a.decision_flip_share:.0%}"
        err.print(f"{a.test:<14} {a.template_set:<14} {a.encoder:<22} d={a.full_d:+.2f} p={a.full_p:.2g} "
                  f"templates={a.n_templates} pooled d={pooled} decision flips={flips}", highlight=False)

    from .encode import progress_for

    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        run_id, _ = store.audit(test, encoder or ["minilm"], template_set, alpha, " ".join(sys.argv[1:]), line,
                                progress_for, budget=budget, seed=seed)
    err.print(f"run {run_id}: see `stimkit audit show --where \"run_id = '{run_id}'\"`", highlight=False)


@audit_app.command("compare")
@handles_errors
def audit_compare_cmd(
    test: Annotated[list[str], typer.Option("--test", "-t", help="A test whose sets come from templates (repeatable).")],
    template_set: Annotated[list[str], typer.Option("--template-set", "-s", help="Template set, built-in or in --template-dir (repeat for each).")],
    encoder: EncoderOption = None,
    alpha: AuditAlpha = 0.01,
    budget: BudgetOption = DEFAULT_BUDGET,
    seed: SeedOption = 0,
    wordlist_dir: WordlistDirOption = None,
    template_dir: TemplateDirOption = None,
    override: OverrideOption = False,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Run the same test under each template set and show how d and p move (rows go to `results`).

    Example:
      stimkit audit compare -t sent-weat6 -e use-m3 -s may2019 -s may2019_fixed -s word_first
    """
    from .encode import progress_for

    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        run_id, rows = store.audit_compare(test, template_set, encoder or ["minilm"], alpha, " ".join(sys.argv[1:]),
                                           progress_for, budget=budget, seed=seed)
    emit(rows, fmt,
         title=f"d and p by template set (shift and flips against {template_set[0]}; alpha {alpha})")
    err.print(f"run {run_id}", highlight=False)


@audit_app.command("show")
@handles_errors
def audit_show_cmd(
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `audits`.")] = None,
    top: Annotated[int, typer.Option("--top", help="Templates listed per audit.")] = 3,
    movers: Annotated[bool, typer.Option("--templates", help="Only the templates that move each test most.")] = False,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """A summary of audits: pooled d, tau2, I2, flip rates, and the templates that move each test most.

    A table shows both parts; JSON is one document {"audits": [...], "rows": [the templates]}; the
    other formats print the audits (or, with --templates, the templates).

    Examples:
      stimkit audit show --top 3
      stimkit audit show --templates --format csv
    """
    from ..output import default_format

    with open_store(read_only=True) as store:
        audits, movers_df = store.audits(where, top)
    if audits.height == 0:
        raise StimkitError("no audits" + (f" where {where}" if where else "") + " (run `stimkit audit templates`)")
    fmt = fmt or default_format()
    if fmt == "json":
        import json

        emit_document({"audits": json.loads(audits.drop("audit_id").write_json())}, movers_df, fmt)
    elif fmt == "table" and not movers:
        emit(audits.drop("audit_id"), fmt)
        out.print("\nTemplates that move each test most (alone, ranked by |d_alone - d|):", highlight=False)
        emit(movers_df, fmt)
    else:
        emit(movers_df if movers else audits.drop("audit_id"), fmt)
