"""Template audit commands: audit templates, compare, show (parse, call the library, print)."""

from __future__ import annotations

import inspect
from typing import Annotated, Optional

import typer

from .. import StimkitError
from ..errors import UsageError
from ..views.text import with_interval
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
    # the procedure as `test` takes it (the library's one resolution against the study in force);
    # alpha: typed, else the study's, else the tests' study's (Store.audit)
    proc = procedure.resolve(current_study(), proc, ("minilm",))
    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        if not compare:
            run_id, _ = store.audit(test, None, template_set, None, command, _audit_line, progress_for, procedure=proc)
            # the audits just stored on stdout, as `audit show` prints them; the lines above went to stderr
            _show(*store.audits(f"run_id = '{run_id}'", alpha=proc.alpha), fmt)
            err.print(result_lines(f"run {run_id}:", f"see `stimkit audit show --where \"run_id = '{run_id}'\"`"),
                      highlight=False)
            return
        if not test:
            raise UsageError("compare needs the tests to compare: --test/-t (repeatable)")
        alpha = proc.alpha if proc.alpha is not None else store.study_alpha(test)
        run_id, rows = store.audit_compare(test, list(template_set or []), None, alpha, command, progress_for,
                                           procedure=proc)
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


@audit_app.command("perturb")
@handles_errors
def audit_perturb_cmd(
    test: Annotated[Optional[list[str]], typer.Option("--test", "-t", help="A test whose sets come from one template set (repeatable; default: the study's sentence tests).")] = None,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoder (repeatable; default: the study's, else minilm).")] = None,
    rule: Annotated[Optional[list[str]], typer.Option("--rule", help="Only these rewording rules or paraphrases (repeatable; default: all).")] = None,
    max_variants: Annotated[Optional[int], typer.Option("--max-variants", help="The bound on a family's size, 1 to 1,000 (STIMKIT_MAX_VARIANTS) (default: the set's perturb.max_variants, else 40).")] = None,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Significance level of the decision flips, p <= alpha (default: the study's, else 0.01).")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Permutation sample budget, 2 to 10,000,000 (STIMKIT_MAX_BUDGET) (default: the study's, else 100,000).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the permutation samples (default: the study's, else 0).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list each family's variants (nothing rendered or stored).")] = False,
    wordlist_dir: WordlistDirOption = None,
    template_dir: TemplateDirOption = None,
    override: OverrideOption = False,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Wording audit: each test under every meaning-preserving rewording of its templates.

    Per test x encoder: variants, d and p per variant, the range of the relative change of d
    against the original (Seshadri et al. 2022), sign and decision flip shares, the templates'
    share of variance over the family, a verdict (robust / fragile); across encoders, Kendall's
    tau of their order by d and the share of variants that keep it. A variant that gives an
    encoder the same input as the original (the same token ids; else the same vectors) changes
    nothing for it: it is named and left out of that encoder's shares. Inside a study its
    procedure applies (seed, budget, units, encoders, alpha, per-test options; a flag
    overrides a key), so the original's d and p are those of `stimkit run`.

    Examples:
      stimkit audit perturb -t sent-weat6 -e minilm
      stimkit audit perturb --study my-study.toml --rule tense-past --rule contraction
    """
    from ..views import audit as views_audit
    from .encode import progress_for

    command = invocation()
    # the study in force (--study, $STIMKIT_STUDY, study.toml here or above): its procedure, and
    # without --test its sentence tests
    found = current_study()
    proc = procedure.resolve(found, {"budget": budget, "seed": seed, "alpha": alpha, "encoder": encoder}, ("minilm",))
    study = found if not test else None
    if dry_run:
        with open_store(read_only=True, wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
            families = store.perturbation_families(test, rule, max_variants, study=study)
        import polars as pl

        emit(pl.DataFrame([{"template_set": f.parent, "variant": v.name, "family": v.family, "lines": len(v.changes),
               "example": f"{v.changes[0].parent_text} -> {v.changes[0].text}"} for f in families.values()
              for v in f.variants]), fmt, title="Perturbation families (before the grammar check)")
        return
    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        run_id, _, _, families = store.audit_perturb(
            test, study=study, rules=rule, max_variants=max_variants, command=command,
            on_family=lambda f: err.print(f.summary(), highlight=False), on_audit=_wording_line,
            progress=progress_for, procedure=proc)
        audits, rankings = store.wording_audits(f"run_id = '{run_id}'")
    tables = {"wording": audits.drop("run_id")}
    if rankings.height:  # one encoder: no order to keep
        tables["rankings"] = rankings.drop("run_id")
    emit_tables(tables, fmt, titles={"wording": WORDING_TITLE, "rankings": RANKINGS_TITLE},
                options={"wording": views_audit.WORDING, "rankings": views_audit.RANKINGS})
    for f in families.values():
        for d in f.dropped:
            err.print(f"dropped {d.variant}{' ' + d.template if d.template else ''}: {d.reason}", highlight=False)
    err.print(f"run {run_id}", highlight=False)


WORDING_TITLE = "Wording audits: d under rewordings of the templates (relative change, flips at alpha, verdict)"
RANKINGS_TITLE = "Encoders' order by d across the rewordings (Kendall's tau against the original's order)"


def _wording_line(a) -> None:
    """One audit's progress line, then the variants that change nothing for its encoder (the
    shares are over the others)."""
    from ..views.audit import no_op_line

    rel = "n/a" if a.rel_change_min is None else f"{a.rel_change_min:+.0%}..{a.rel_change_max:+.0%}"
    counted = f" ({a.n_variants - a.n_no_op} counted)" if a.n_no_op else ""
    err.print(f"{a.test}  {a.encoder}  d={a.original_d:+.2f} p={a.original_p:.2g}  {a.n_variants} variants{counted}  "
              f"change {rel}  sign flips {_share(a.sign_flip_share)}  decision flips {_share(a.decision_flip_share)}  "
              f"{a.verdict}", highlight=False)
    line = no_op_line(a.test, a.encoder, a.no_op_variants)
    if line:
        err.print(line, highlight=False)


def _share(x) -> str:
    """A share as a percentage; n/a where no variant changes the encoder's input."""
    return "n/a" if x is None else f"{x:.0%}"


def _no_op_lines(wording) -> None:
    """`audit show`: each stored wording audit's variants that change nothing for its encoder."""
    from ..views.audit import no_op_line

    for row in wording.iter_rows(named=True):
        line = no_op_line(row["test"], row["encoder"], row.get("no_op_variants"))
        if line:
            err.print(line, highlight=False)


@audit_app.command("ceat")
@handles_errors
def audit_ceat_cmd(
    test: Annotated[list[str], typer.Option("--test", "-t", help="A test whose words have several contexts (a corpus import's sets; repeatable).")],
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoder (repeatable; default: the study's, else minilm).")] = None,
    context: Annotated[str, typer.Option("--context", help="c-word (a word's own vector in each context) or sentence (the pooled sentence).")] = "c-word",
    samples: Annotated[int, typer.Option("--samples", "-n", help="CEAT's N: draws of one context a word, 2 to 100,000 (STIMKIT_MAX_CEAT_SAMPLES); default the paper's 10,000 (under 7 s on 2 cores for 25 words a list in 768 dimensions: bench/bench_corpus.py --ceat).")] = 10000,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the draws and of the test's permutations (default: the study's, else 0).")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Permutation sample budget of the test's own p, 2 to 10,000,000 (STIMKIT_MAX_BUDGET) (default: the study's, else 100,000).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """CEAT's combined effect size (Guo & Caliskan 2021) beside stimkit's d and the crossed model's d.

    CEAT draws one context a word N times and pools the draws' effect sizes with a random-effects
    model; its p pools N correlated draws and is far smaller than a test's own p. A test whose
    every word has one context is refused (its N draws are one draw repeated); where some words
    have one, the row's note says so. Inside a study its procedure applies (encoders, seed,
    budget, units, per-test options). The rows are stored (`ceat_results`) with their run.

    Example:
      stimkit audit ceat -t my-corpus-test -e minilm -n 1000
    """
    import dataclasses

    import polars as pl

    from ..views import audit as views_audit

    from .encode import progress_for

    proc = procedure.resolve(current_study(), {"seed": seed, "budget": budget, "encoder": encoder}, ("minilm",))
    with open_store() as store:
        rows = store.ceat(test, context=context, samples=samples,
                          progress=progress_for, command=invocation(), procedure=proc)
    shown = [{k: v for k, v in dataclasses.asdict(r).items() if k not in ("fingerprint", "ces_variance", "q")}
             for r in rows]
    emit(pl.DataFrame(shown), fmt,
         title="CEAT's combined effect size (CES, its p) beside stimkit's d and p and the crossed model's d",
         **views_audit.CEAT)
    for r in rows:
        if r.note:
            err.print(f"note: {r.test} {r.encoder}: {r.note}", highlight=False)
    if rows:
        err.print(f"run {rows[0].run_id}", highlight=False)


MAX_TOP = 1_000  # templates listed per audit: more than any template set holds


@audit_app.command("show")
@handles_errors
def audit_show_cmd(
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `audits`.")] = None,
    top: Annotated[int, typer.Option("--top", help=f"Templates listed per audit, 1 to {MAX_TOP:,}.")] = 3,
    movers: Annotated[bool, typer.Option("--templates", help="Only the templates that move each test most.")] = False,
    variants: Annotated[bool, typer.Option("--variants", help="Only the wording audits' variants: d, p, relative change, flips, and whether each changes nothing for its encoder (no_op).")] = False,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Decision flips at this alpha, recomputed from the stored p (default: the study's, else each audit's own).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """A summary of audits: pooled d, tau2, I2, flip rates, and the templates that move each test most.

    Without --where: the latest audit of each test, encoder and template set, one d and p of the
    original wording each (an older audit under another procedure is left out, with a note).

    Both tables in every format: JSON is one document {"rows": [the audits], "templates": [...]};
    csv and tsv print the audits, a blank line, then the templates, each with its header line;
    ndjson and parquet name each row's table in a `table` column. --templates: the templates alone.

    Examples:
      stimkit audit show --top 3
      stimkit audit show --templates --format csv
      stimkit audit show --variants --where "test = 'sent-weat6'"
    """
    from ..views import audit as views_audit

    if not 1 <= top <= MAX_TOP:
        raise UsageError(f"--top must be between 1 and {MAX_TOP:,}, not {top}")
    alpha = alpha if alpha is not None else study_value("alpha")
    if variants:
        with open_store(read_only=True) as store:
            rows = store.wording_variants(where)
        if rows.height == 0:
            raise StimkitError("no wording audits" + (f" where {where}" if where else "") + " (run `stimkit audit perturb`)")
        emit(rows, fmt, title="Wording audits: d and p under each rewording (the original first)", **views_audit.VARIANTS)
        return
    with open_store(read_only=True) as store:
        audits, movers_df = store.audits(where, top, alpha)
        wording = rankings = None
        if not movers:  # wording audits (`audit perturb`) too, where --where reads their table
            try:
                wording, rankings = store.wording_audits(where)
            except StimkitError:
                if not audits.height:
                    raise
        if where is None:  # the latest of each, one d and p of the original per test and encoder
            from ..analysis.stored import one_original

            kept, wording, notes = one_original(store.con, audits, wording)
            if kept.height != audits.height:
                ids = ", ".join("'" + i.replace("'", "''") + "'" for i in kept["audit_id"].to_list())
                audits, movers_df = store.audits(f"audit_id IN ({ids})", top, alpha)
            if wording is not None and rankings is not None:
                rankings = rankings.filter(rankings["run_id"].is_in(wording["run_id"].to_list()))
            for note in notes:
                err.print(note, highlight=False)
    if wording is not None and wording.height:
        tables = {"audits": audits.drop("audit_id"), "templates": movers_df} if audits.height else {}
        tables.update(wording=wording, **({"rankings": rankings} if rankings.height else {}))
        emit_tables(tables, fmt, titles={"audits": audits_title(audits), "templates": TEMPLATES_TITLE,
                                         "wording": WORDING_TITLE, "rankings": RANKINGS_TITLE},
                    options={"audits": views_audit.AUDITS, "templates": views_audit.TEMPLATES,
                             "wording": views_audit.WORDING, "rankings": views_audit.RANKINGS})
        _no_op_lines(wording)
        return
    if audits.height == 0:
        raise StimkitError("no audits" + (f" where {where}" if where else "") + " (run `stimkit audit templates` "
                           "or `stimkit audit perturb`)")
    _show(audits, movers_df, fmt, movers)


TEMPLATES_TITLE = "Templates that move each test most (alone: those that flip the decision first, then by |d_alone - d|)"


def audits_title(audits) -> str:
    """The audits table's title, with the alpha its flip rates are at."""
    at = ", ".join(sorted({f"{a:g}" for a in audits["alpha"]})) if "alpha" in audits.columns and audits.height else ""
    return "Template audits: the full test, the pooled d over its templates, flip rates" + (f" at alpha {at}" if at else "")




def _show(audits, movers_df, fmt, movers_only: bool = False) -> None:
    """The audits and the templates that move each most, both in every format (or the templates alone)."""
    from ..views import audit as views_audit

    if movers_only:
        emit(movers_df, fmt, title=TEMPLATES_TITLE, **views_audit.TEMPLATES)
    else:
        emit_tables({"audits": audits.drop("audit_id"), "templates": movers_df}, fmt,
                    titles={"audits": audits_title(audits), "templates": TEMPLATES_TITLE},
                    options={"audits": views_audit.AUDITS, "templates": views_audit.TEMPLATES})
