"""WEFAT commands: wefat (run one, catalog or ad hoc), wefat-results (stored results)."""

from __future__ import annotations

import json
import math
import sys
from typing import Annotated, Optional

import typer

from .. import DEFAULT_BUDGET
from ..choices import WEFAT_CONTEXTS, WORD_P_METHODS, choices
from .common import app, emit, err, format_option, handles_errors, open_store, result_lines

SUMMARY_COLUMNS = ["name", "encoder", "context", "n", "r", "p_value", "rho", "slope", "intercept", "dropped_words"]
WORD_COLUMNS = ["word", "association", "property", "word_p_value", "n_stimuli", "dropped"]


def _clean(value):
    """JSON has no NaN: a missing number is null."""
    return None if isinstance(value, float) and math.isnan(value) else value


def words(result) -> list[dict]:
    """A WefatResult's per-word rows (without the result id every one of them repeats)."""
    from ..store import as_record

    return [{k: _clean(v) for k, v in as_record(it).items() if k != "result_id"} for it in result.items]


def document(result) -> dict:
    """The one JSON document of a run: the summary, and a row per target word."""
    from ..store import as_record

    summary = {k: _clean(v) for k, v in as_record(result).items()}
    summary["options"] = json.loads(summary["options"])
    return {"summary": summary, "words": words(result)}


def summary_line(r) -> str:
    """A WEFAT's result in lines that fit 80 columns: what, its figures, the words left out."""
    return result_lines(f"{r.name}  {r.encoder} ({r.context})",
                        f"r = {r.r:.3f}, p = {r.p_value:.3g}, rho = {r.rho:.3f}, n = {r.n}, slope = {r.slope:.3g} "
                        f"[{r.slope_ci_low:.3g}, {r.slope_ci_high:.3g}]",
                        f"dropped {', '.join(r.dropped_words)}" if r.dropped_words else "")


@app.command("wefat")
@handles_errors
def wefat_cmd(
    name: Annotated[Optional[str], typer.Argument(help="A WEFAT from queries/wefat.toml (wefat-occupations, wefat-names).")] = None,
    targets: Annotated[Optional[str], typer.Option("--targets", help="Target words: word-list name, set name or SQL.")] = None,
    a: Annotated[Optional[str], typer.Option("--a", help="Attribute set A (e.g. female_terms): word-list name, set name or SQL.")] = None,
    b: Annotated[Optional[str], typer.Option("--b", help="Attribute set B; A and B may differ in size (WEFAT does not need equal sizes).")] = None,
    prop: Annotated[Optional[str], typer.Option("--property", help="Property table (properties/<name>.csv or a .csv path), or SQL returning word, value.")] = None,
    label: Annotated[str, typer.Option("--name", help="Name of the ad-hoc WEFAT.")] = "adhoc",
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoder spec (repeatable; default: the study's, else glove-6b-50d).")] = None,
    context: Annotated[Optional[str], typer.Option("--context", help=f"{choices(WEFAT_CONTEXTS)}: bare list names go through `word` or --templates.")] = None,
    templates: Annotated[str, typer.Option("--templates", help="Template set of the sentence context.")] = "may2019",
    drop: Annotated[Optional[float], typer.Option("--drop-least-typical", help="Leave out this fraction of targets farthest from their centroid (e.g. 0.2; default: off, or the catalog entry's).")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for a CI of r (0: none).")] = 0,
    method: Annotated[str, typer.Option("--method", help=f"Per-word p-value: {choices(WORD_P_METHODS)}.")] = "auto",
    budget: Annotated[Optional[int], typer.Option("--budget", help=f"Partitions per word beyond which p is sampled, 2 to 10,000,000 (STIMKIT_MAX_BUDGET) (default: the study's, else {DEFAULT_BUDGET:,}).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the sampled p and the bootstrap (default: the study's, else 0).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Word Embedding Factual Association Test: correlate s(w, A, B) of target words with a property.

    s(w) = (mean_a cos(w,a) - mean_b cos(w,b)) / std over A u B (ddof 1); per word a permutation
    p over partitions of A u B; overall Pearson r (p as scipy.stats.pearsonr), Spearman rho and the
    regression of the property on s(w). A and B may differ in size. The result goes to the store.
    Inside a study: its encoders (a result each), seed and budget, as `stimkit run` gives its WEFATs.

    Examples:
      stimkit wefat wefat-occupations -e glove-6b-50d --format json
      stimkit wefat --targets occupations --a female_terms --b male_terms --property bls2015_percent_women
    """
    import polars as pl

    from .encode import progress_for

    from . import procedure
    from .common import current_study, invocation

    proc = procedure.resolve(current_study(), {"budget": budget, "seed": seed, "encoder": encoder})
    with open_store() as store:
        results = [store.wefat(name, enc, targets=targets, a=a, b=b, property=prop, label=label, context=context,
                               templates=templates, progress=progress_for, command=invocation(), procedure=proc,
                               method=method, bootstrap=bootstrap, drop_least_typical=drop)
                   for enc in proc.encoders]
    for result in results:  # one encoder: one document or table, as before; several: one each, in order
        if fmt == "json":
            sys.stdout.write(json.dumps(document(result)) + "\n")
            continue
        err.print(summary_line(result), highlight=False)
        emit(pl.DataFrame(words(result), infer_schema_length=None).drop("set_version", "template_ids", "ordinal"), fmt,
             WORD_COLUMNS if fmt in (None, "table") else None)


@app.command("wefat-results")
@handles_errors
def wefat_results_cmd(
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `wefat_results` (default: latest run).")] = None,
    words: Annotated[bool, typer.Option("--words", help="Per-word rows (wefat_items) instead of summaries.")] = False,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Stored WEFAT results (or their per-word rows).

    Example:
      stimkit wefat-results --words --format csv
    """
    with open_store(read_only=True) as store:
        df = store.wefat_results(where, words)
    if df.height == 0:
        err.print("no WEFAT results (run `stimkit wefat`)", highlight=False)
        return
    emit(df, fmt, (["name", "encoder", "context", "word", "association", "property", "word_p_value", "dropped"] if words
                   else SUMMARY_COLUMNS) if fmt in (None, "table") else None)
