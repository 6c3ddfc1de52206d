"""Template audit commands: audit templates, compare, show."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .. import StimkitError, audit, catalog, encoders, runner, store
from .common import app, emit, err, handles_errors, open_store, out, print_rows

audit_app = typer.Typer(help="Template audits: how template choice moves d and p.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")


def caliskan_sentence_tests() -> list[str]:
    return [n for n, t in catalog.by_paper(catalog.load_toml(), catalog.DEFAULT_PAPER).items() if n.startswith("sent-weat")]


@audit_app.command("templates")
@handles_errors
def audit_templates_cmd(
    test: Annotated[Optional[list[str]], typer.Option("--test", "-t", help="Catalog test (repeatable); default: the sent- Caliskan tests.")] = None,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoder (repeatable).")] = None,
    template_set: Annotated[Optional[list[str]], typer.Option("--template-set", "-s", help="Template set (repeatable).")] = None,
    alpha: Annotated[float, typer.Option("--alpha")] = 0.01,
    budget: Annotated[int, typer.Option("--budget")] = runner.stats.DEFAULT_BUDGET,
    seed: Annotated[int, typer.Option("--seed")] = 0,
):
    """Per template: the test alone and left out, a random-effects meta-analysis, flip rates, word influence."""
    con = open_store()
    names = test or caliskan_sentence_tests()
    tests = [catalog.get(con, n) for n in names]
    sets = template_set or [audit.SENTENCE_SET]
    for t in tests:
        for sname in sets:
            audit.retemplate(t, sname)  # refuse a test without sentence sets before any work
    encs = [encoders.resolve(e) for e in (encoder or ["minilm"])]
    opts = runner.Options(budget=budget, seed=seed)
    with store.transaction(con):
        run_id = runner.start_run(con, " ".join(sys.argv[1:]), seed)
        for enc in encs:
            for t in tests:
                for sname in sets:
                    a = audit.audit_one(con, run_id, t, enc, sname, opts, alpha)
                    pooled = "n/a" if a["pooled_d"] is None else f"{a['pooled_d']:+.2f} tau2={a['tau2']:.3f} I2={a['i2']:.0%}"
                    flips = "n/a" if a["decision_flip_share"] is None else f"{a['decision_flip_share']:.0%}"
                    err.print(f"{t.name:<14} {sname:<14} {enc.spec:<22} d={a['full_d']:+.2f} p={a['full_p']:.2g} "
                              f"templates={a['n_templates']} pooled d={pooled} decision flips={flips}", highlight=False)
    out.print(f"run {run_id}: see `stimkit audit show --where \"run_id = '{run_id}'\"`", highlight=False)


@audit_app.command("compare")
@handles_errors
def audit_compare_cmd(
    test: Annotated[list[str], typer.Option("--test", "-t", help="Catalog test (repeatable).")],
    template_set: Annotated[list[str], typer.Option("--template-set", "-s", help="Template set (repeat for each).")],
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e")] = None,
    alpha: Annotated[float, typer.Option("--alpha")] = 0.01,
    budget: Annotated[int, typer.Option("--budget")] = runner.stats.DEFAULT_BUDGET,
    seed: Annotated[int, typer.Option("--seed")] = 0,
):
    """Run the same test under each template set and show how d and p move (rows go to `results`)."""
    if len(template_set) < 2:
        raise StimkitError("compare needs at least two --template-set")
    con = open_store()
    tests = [catalog.get(con, n) for n in test]
    for t in tests:
        for sname in template_set:
            audit.retemplate(t, sname)
    encs = [encoders.resolve(e) for e in (encoder or ["minilm"])]
    opts = runner.Options(budget=budget, seed=seed)
    rows = []
    with store.transaction(con):
        run_id = runner.start_run(con, " ".join(sys.argv[1:]), seed)
        for enc in encs:
            for t in tests:
                found = audit.compare(con, run_id, t, enc, template_set, opts)
                base = found[0]
                for r in found:
                    rows.append({"test": t.name, "encoder": enc.spec, "template_set": r["template_set"],
                                 "n_x": r["n_x"], "d": f"{r['effect_size']:+.3f}", "d_shift": f"{r['effect_size'] - base['effect_size']:+.3f}",
                                 "p": f"{r['p_value']:.3g}", "significant": r["p_value"] <= alpha,
                                 "flips": "decision" if (r["p_value"] <= alpha) != (base["p_value"] <= alpha) else
                                          ("sign" if (r["effect_size"] > 0) != (base["effect_size"] > 0) else "")})
    print_rows(rows, list(rows[0]), title=f"d and p by template set (shift and flips against {template_set[0]}; alpha {alpha})")
    out.print(f"run {run_id}", highlight=False)


@audit_app.command("show")
@handles_errors
def audit_show_cmd(
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `audits`.")] = None,
    top: Annotated[int, typer.Option("--top", help="Templates listed per audit.")] = 3,
    fmt: Annotated[str, typer.Option("--format")] = "table",
):
    """A readable summary of audits: pooled d, tau2, I2, flip rates, and the templates that move each test most."""
    con = open_store()
    try:
        audits, movers = audit.summary(con, where, top)
    except Exception as e:
        raise StimkitError(f"--where {where!r}: {str(e).splitlines()[0]}") from None
    if audits.height == 0:
        raise StimkitError("no audits" + (f" where {where}" if where else "") + " (run `stimkit audit templates`)")
    emit(audits.drop("audit_id"), fmt)
    if fmt == "table":
        out.print("\nTemplates that move each test most (alone, ranked by |d_alone - d|):", highlight=False)
    emit(movers, fmt)


