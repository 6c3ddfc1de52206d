"""Commands over tests and results: test, results, check, query, run (parse, call the library, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import DEFAULT_BUDGET, DEFAULT_PAPER, UsageError
from ..choices import (ALTERNATIVES, BALANCE_POLICIES, CENTERINGS, CONTEXTS, CORRECTIONS, LAYOUTS, METRIC_NAMES, P_METHODS,
                      RESULT_KINDS, SOURCES, UNITS, choices)
from .common import (FORMATS, ColumnsOption, OverrideOption, TemplateDirOption, WideOption, WordlistDirOption, app, check_alpha, check_correction,
                     count as _count, db_path, emit, err, family_line, format_option,
                     handles_errors, invocation, open_store, out, result_lines, current_study)
from . import procedure
from .procedure import OUTPUT, PROCEDURE, WHAT

AlphaOption = Annotated[float, typer.Option("--alpha", help="Significance level, in (0, 1).")]
ReadAlphaOption = Annotated[Optional[float], typer.Option(
    "--alpha", help="Significance level, in (0, 1) (default: the study's whose runs make the family, else 0.01).")]
CorrectOption = Annotated[Optional[str], typer.Option(
    "--correct", help=f"Multiple-testing correction: {choices(CORRECTIONS)} (default: the study's, else holm).")]
RunOption = Annotated[Optional[str], typer.Option(
    "--run", help="One run's results (a run id, or `latest`) instead of the latest result of every hypothesis in the store.")]
WhereOption = Annotated[Optional[str], typer.Option("--where", help="SQL condition that filters the family (one expression).")]


def progress_callbacks(verbose: bool):
    """Progress bar, a line per result (verbose) and a line per failure, all on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..views.text import n_text, p_text, with_interval
    from .encode import progress_for

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=err, transient=True, disable=verbose or not err.is_terminal)
    task = bar.add_task("tests", total=None)

    def on_result(r):  # a rows.ResultEvent
        done, total = r.done, r.total
        bar.update(task, completed=done, total=total, description=f"{r.test} / {r.encoder}")
        if verbose:
            notes = [f"{r.n_dropped_oov} stimuli without a vector dropped"] if r.n_dropped_oov else []
            if r.n_balanced_away:
                notes.append(f"{r.n_balanced_away} cut by balance={r.balance}")
            if r.cuts:
                notes.append(f"{r.cuts} cuts: d {r.cut_d_min:+.2f}..{r.cut_d_max:+.2f}, {r.cut_reject_share:.0%} reject")
            value = f"d={r.effect_size:+.3f}" if r.metric == "weat" else f"{r.metric}={r.statistic:+.3f}"
            if r.metric == "weat":
                value = with_interval(value, r.ci_low, r.ci_high)
            p = p_text(r.p_value, r.min_p) if r.p_value is not None else "n/a"
            err.print(result_lines(f"[{done}/{total}] {r.test}  {r.encoder}",
                                   f"{value} p{'' if p.startswith('<') else '='}{p} ({r.p_method or r.p_null_reason}) "
                                   f"n {n_text(vars(r))}", "; ".join(notes), *result_flags(r)),
                      highlight=False)

    def on_failure(f):
        err.print(f"failed: {f}", style="red", highlight=False)

    return bar, {"progress": progress_for, "on_result": on_result, "on_failure": on_failure}


def result_flags(r) -> list[str]:
    """What a person must know about a result just computed, at the run's alpha: the decision
    flips without one word; it is significant only with sentences as units."""
    from ..views.text import SENTENCES_ONLY, fragile_text

    found = []
    if r.fragile and r.influential_word is not None:
        found.append(f"{fragile_text(r.influential_word, r.influential_d, r.influential_p)} ({r.influential_role})")
    alpha = r.influence_alpha
    if (r.units == "sentences" and r.p_value is not None and r.p_words is not None and alpha is not None
            and r.p_value <= alpha < r.p_words):
        found.append(f"{SENTENCES_ONLY} significant at {alpha} only over sentences: words as units give p {r.p_words:.2g}")
    return found


def warn_cannot_reject(report, alpha: float) -> None:
    weak = report.cannot_reject
    if weak:
        tests = sorted({r.test for r in weak})
        names = ", ".join(tests[:5]) + (", ..." if len(tests) > 5 else "")
        err.print(result_lines(f"warning: {_count(len(weak), 'result')} cannot reach p <= {alpha} whatever the data "
                               f"(smallest possible p above alpha; marked † in tables): {names}"), highlight=False)


def baseline_line(b, reused: bool = False) -> str:
    """One baseline in words: where d falls among matched random pairs, and which side carries it."""
    return result_lines(f"baseline {b.test} / {b.encoder}" + (" (stored, reused)" if reused else ""),
                        f"d {b.observed_d:+.2f} lies at the {b.percentile:.1f}th percentile of {b.k:,} matched random "
                        f"pairs (random d {b.d_median:+.2f} [{b.d_low:+.2f}, {b.d_high:+.2f}])",
                        f"{b.fpr:.1%} of them reach p <= {b.alpha:g}; X vs its random words {b.d_x:+.2f}, Y vs its "
                        f"random words {b.d_y:+.2f}")


SUMMARY_LINES = 3  # `stimkit run`: more warnings or baselines than this are a count with the command that lists them


def finish(report, summary: bool = False, closing=None) -> None:
    """The run's notes, warnings and summary line; exit 1 when any test or encoder failed.
    `summary` (`stimkit run`): many warnings or baselines become a line each saying how many.
    `closing`: what the command prints last (its rows on stdout, or `run`'s summary line), even
    when some part failed."""
    for note in report.notes:
        err.print(result_lines(note), highlight=False)
    if summary and len(report.warnings) > SUMMARY_LINES:
        tests = sorted({w.split(":")[0].removeprefix("test ") for w in report.warnings})
        err.print(result_lines(f"warning: {_count(len(report.warnings), 'stimulus warning')} (X and Y differ in word "
                               f"frequency or length) in {_count(len(tests), 'test')}: `stimkit sets --diagnose` shows "
                               "the sets' frequencies, `stimkit test NAME` says each"), highlight=False)
    else:
        for warning in report.warnings:  # stimulus diagnostics: X and Y differ in frequency or length
            err.print(result_lines(f"warning: {warning}"), highlight=False)
    if summary and len(report.baselines) > SUMMARY_LINES:
        err.print(result_lines(f"{_count(len(report.baselines), 'matched baseline')}: `stimkit results --run "
                               f"{report.run_id} --columns test,encoder,d,baseline_percentile,baseline_fpr` lists them"),
                  highlight=False)
    else:
        for b in report.baselines:
            err.print(baseline_line(b, b.baseline_id in report.reused), highlight=False)
    if report.summaries:  # a replicate family's tests (run.replicates): `stimkit replicates` lists them
        from ..views.replicates import summary_line

        for row in report.summaries:
            err.print(result_lines(summary_line(row)), highlight=False)
    if report.run_id and not report.computed:  # a study's run whose inputs all stand as they were
        err.print(result_lines(f"nothing changed since run {report.run_id}: "
                               f"{_count(len(report.reused_results), 'result')} reused, nothing computed.",
                               "`stimkit status` says what an edit would change"), highlight=False)
    elif report.run_id and not summary:  # `run` says its own summary line, last
        reused = f" ({len(report.reused_results)} more reused unchanged)" if report.reused_results else ""
        err.print(result_lines(f"run {report.run_id}: {_count(len(report.results), 'result')}{reused} from "
                               f"{_count(report.n_tests, 'test')} x {_count(report.n_encoders, 'encoder')}, "
                               f"{_count(len(report.failures), 'failure')}.", f"see `stimkit results --run {report.run_id}`"),
                  highlight=False)
    if closing is not None:
        closing()
    if report.failures:
        if not report.run_id and len(report.failures) > 1:  # a single failure has said it all in its line
            err.print(f"nothing stored: {_count(len(report.failures), 'failure')}", highlight=False)
        raise typer.Exit(1)


@app.command("test")
@handles_errors
@procedure.takes_procedure
def test_cmd(
    patterns: Annotated[Optional[list[str]], typer.Argument(
        help="Tests by name or shell-style pattern over catalog and imported tests ('sent-weat*', '*angry*').")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every test: the catalog and imported ones.", rich_help_panel=WHAT)] = False,
    source: Annotated[Optional[str], typer.Option("--source", help=f"Only the tests of one source: {choices(SOURCES)}.", rich_help_panel=WHAT)] = None,
    x: Annotated[Optional[str], typer.Option("--x", help="Ad-hoc test: SQL or set name for the target set X.", rich_help_panel=WHAT)] = None,
    y: Annotated[Optional[str], typer.Option("--y", help="Ad-hoc test: SQL or set name for the target set Y.", rich_help_panel=WHAT)] = None,
    a: Annotated[Optional[str], typer.Option("--a", help="Ad-hoc test: SQL or set name for the attribute set A.", rich_help_panel=WHAT)] = None,
    b: Annotated[Optional[str], typer.Option("--b", help="Ad-hoc test: SQL or set name for the attribute set B.", rich_help_panel=WHAT)] = None,
    name: Annotated[str, typer.Option("--name", help="Name of the ad-hoc test (stored: `stimkit test NAME` runs it again).", rich_help_panel=WHAT)] = "adhoc",
    save: Annotated[Optional[Path], typer.Option("--save", help="Write the test's definition as TOML (for a --catalog-dir folder).", rich_help_panel=OUTPUT)] = None,
    cross_lingual: Annotated[bool, typer.Option("--cross-lingual", help="Ad-hoc test: targets in one language, attributes in another, on purpose (else refused).", rich_help_panel=WHAT)] = False,
    context: Annotated[Optional[str], typer.Option("--context", help=f"{choices(CONTEXTS)} (a sentence test's inserted word; c-word:<slot>: that slot's word of a multi-slot set; default: the test's own; an ad-hoc test of four list@word sets is word, one over corpus sets c-word).", rich_help_panel=WHAT)] = None,
    bootstrap: Annotated[Optional[int], typer.Option("--bootstrap", help="Bootstrap replicates for a CI of d (0: none).", rich_help_panel=PROCEDURE)] = None,
    cuts: Annotated[Optional[int], typer.Option("--cuts", help="Also run K independent cuts and store the spread of d and p.", rich_help_panel=PROCEDURE)] = None,
    center: Annotated[Optional[str], typer.Option("--center", help=f"Centre the vectors before cosines: {choices(CENTERINGS)} (abtt:K also removes the reference's top K directions).", rich_help_panel=PROCEDURE)] = None,
    center_ref: Annotated[Optional[str], typer.Option("--center-ref", help="The centring reference: test (the test's own four sets) or a set name or SELECT.", rich_help_panel=PROCEDURE)] = None,
    metric: Annotated[Optional[str], typer.Option("--metric", help=f"Association metrics, comma-separated: {', '.join(METRIC_NAMES)} (one result each; default: the test's own, else weat).", rich_help_panel=WHAT)] = None,
    baseline: Annotated[Optional[int], typer.Option("--baseline", help="Also a matched random baseline of K pairs per result (stored, reused; see `stimkit baseline`); 0: none (default: the study's [baseline] sets).", rich_help_panel=PROCEDURE)] = None,
    wordlist_dir: WordlistDirOption = None,
    template_dir: TemplateDirOption = None,
    override: OverrideOption = False,
    rerun: Annotated[bool, typer.Option("--rerun", help="Re-run one result (the report's recipe): the ad-hoc test may carry a test's name (its seed streams and cut derive from it) and is not stored, so it never stands in for that test.", rich_help_panel=OUTPUT)] = False,
    verbose: Annotated[bool, typer.Option("--verbose/--quiet", "-v/-q", help="A line per result (on stderr).", rich_help_panel=OUTPUT)] = True,
    fmt: Annotated[Optional[str], format_option(help=f"The run's results on stdout, as `stimkit results --run` prints "
                                                     f"them: {' | '.join(FORMATS)} (default: table on a terminal, "
                                                     "csv otherwise).")] = None,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    replicate: Annotated[Optional[list[str]], typer.Option(
        "--replicate", help="NAME=SPEC: one replicate of the family `-e replicates:NAME` (repeat it, once a replicate; "
                            "a study's [replicates] table names them too). `-e trained:NAME` is the family `stimkit "
                            "train` made.", rich_help_panel=WHAT)] = None,
    proc: dict = None,
):
    """Run association tests (catalog, imported or ad-hoc) for one or more encoders; results go to the store.

    The run's results go to stdout (as `stimkit results --run ID` prints them: a table on a
    terminal, csv to a file or pipe); a line per result and the notes go to stderr.

    Examples:
      stimkit test weat6 -e glove-6b-50d -f csv > out.csv
      stimkit test weat6 sent-weat6 -e glove-6b-50d -e use-m3
      stimkit test 'sent-weat*' -e minilm --cuts 20
      stimkit test sent-weat1 --context c-word -e minilm
      stimkit test weat6 -e trained:inaugural
    """
    from ..run.replicates import parse_named
    from ..stats.metrics import parse_metrics

    study = current_study()
    # the library's one resolution (run.options.procedure): the study's options, what was typed
    # over them, and the study's [options."<pattern>"] where no flag says otherwise
    resolved = procedure.resolve(study, {**proc, "bootstrap": bootstrap, "cuts": cuts,
                                         "metrics": tuple(parse_metrics(metric)) if metric else None,
                                         "center": center, "center_ref": center_ref})
    per_test = resolved.per_test()
    opts = resolved.options()
    if baseline is None and study is not None:
        baseline = study.baseline
    from .crows import crows_names, run_test as run_crows

    if crows_names(patterns):  # an imported CrowS test is a likelihood test over its pairs (run.crows),
        # on the embedded language model unless -e (or the study) names another
        return run_crows(list(patterns), procedure.resolve(study, proc, ("smollm2-135m",)), fmt, verbose)
    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        bar, callbacks = progress_callbacks(verbose)
        with bar:
            report = store.test(patterns, encoders=list(resolved.encoders), everything=everything,
                                source=source, x=x, y=y, a=a, b=b, name=name, context=context, command=invocation(),
                                options=opts, save=save, cross_lingual=cross_lingual, rerun=rerun,
                                baseline=baseline or None, per_test=per_test, study=study,
                                replicates=parse_named(replicate or []), **callbacks)
        rows = run_rows(store, report.run_id, opts.alpha, fmt, columns, wide)
    warn_cannot_reject(report, opts.alpha)
    finish(report, closing=lambda: rows and show_run_rows(*rows))


def run_rows(store, run_id: str | None, alpha: float, fmt: str | None, columns: str | None, wide: bool = False):
    """The results a command just made, read as `stimkit results --run ID` reads them (the
    run's family, corrected at the command's alpha), ready for `show_run_rows`; None when the
    run stored nothing."""
    from ..views import results as results_view
    from ..views.emit import default_format

    if not run_id:
        return None
    fmt = fmt or default_format()
    plain = fmt in results_view.ROWS_FORMATS
    read = store.result_rows if plain else store.results
    df = read(None, run_id, None, alpha, False, "test", study=current_study())
    return df, fmt, columns, wide


def show_run_rows(df, fmt: str, columns: str | None, wide: bool = False) -> None:
    from ..views import results as results_view

    results_view.show(df, df.family, fmt, columns, wide)


@app.command("baseline")
@handles_errors
@procedure.takes_procedure
def baseline_cmd(
    patterns: Annotated[list[str], typer.Argument(help="Tests by name or shell-style pattern.")],
    sets: Annotated[Optional[int], typer.Option("--sets", "-k", help="K: random pairs of target sets to draw (default: the study's baseline sets, else 1,000).", rich_help_panel=WHAT)] = None,
    vocabulary: Annotated[Optional[Path], typer.Option("--vocabulary", help="Draw from the words of this file (one a line) instead of wordfreq's list (a list of given names: the bundled names vocabulary).", rich_help_panel=WHAT)] = None,
    tolerance: Annotated[Optional[float], typer.Option("--tolerance", help="Zipf distance allowed between a drawn word and the target word it stands for (default 0.25).", rich_help_panel=WHAT)] = None,
    language: Annotated[Optional[str], typer.Option("--language", help="The words' language (wordfreq's code): frequencies and the default vocabulary (default: each test's targets' own).", rich_help_panel=WHAT)] = None,
    wordlist_dir: WordlistDirOption = None,
    template_dir: TemplateDirOption = None,
    override: OverrideOption = False,
    fmt: Annotated[Optional[str], format_option()] = None,
    proc: dict = None,
):
    """What a d means on this encoder: the test's d against K matched random pairs of target sets.

    Each random word matches one target word on frequency (wordfreq's Zipf scale, within
    --tolerance), on subword count under the encoder's tokenizer (a static vocabulary: the word
    is in it) and on word kind where the lexicon knows it; the drawn words go through the
    test's own templates and procedure (the options below, as for `test`). Prints the observed
    d, its percentile among the random d, the share of random pairs rejected at --alpha (the
    procedure's false-positive rate on this encoder), the random d's median and 95% range, and
    d of X and of Y against their own random words (which side carries the effect). Stored and
    reused: `results` then shows baseline_percentile and baseline_fpr beside a matching result.

    Examples:
      stimkit baseline weat6 -e glove-6b-50d --sets 1000
      stimkit baseline sent-weat6 -e minilm --sets 200 --units words --seed 3
    """
    import polars as pl

    from .encode import progress_for

    study = current_study()
    resolved = procedure.resolve(study, proc)
    opts = resolved.options()
    drawn = {k: v for k, v in ((study.baseline or {}) if study is not None else {}).items()}
    drawn.update({k: v for k, v in {"sets": sets, "seed": proc["seed"], "tolerance": tolerance, "vocabulary": vocabulary,
                                    "language": language}.items() if v is not None})
    drawn.setdefault("seed", opts.seed)  # as `test --baseline` and `run` draw: the procedure's seed
    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        report = store.baseline(patterns, encoders=list(resolved.encoders), command=invocation(),
                                options=opts, per_test=resolved.per_test(), progress=progress_for, study=study,
                                on_failure=lambda f: err.print(f"failed: {f}", style="red", highlight=False), **drawn)
    sets = report.baselines[0].k if report.baselines else drawn.get("sets", 1000)
    rows = [{"test": b.test, "encoder": b.encoder, "d": b.observed_d, "percentile": b.percentile, "fpr": b.fpr,
             "random_d": b.d_median, "random_low": b.d_low, "random_high": b.d_high, "d_x": b.d_x, "d_y": b.d_y,
             "k": b.k, "stored": "reused" if b.baseline_id in report.reused else "new", "baseline_id": b.baseline_id}
            for b in report.baselines]
    schema = {"test": pl.String, "encoder": pl.String, "d": pl.Float64, "percentile": pl.Float64, "fpr": pl.Float64,
              "random_d": pl.Float64, "random_low": pl.Float64, "random_high": pl.Float64, "d_x": pl.Float64,
              "d_y": pl.Float64, "k": pl.Int64, "stored": pl.String, "baseline_id": pl.String}
    if rows:  # nothing drawn (every pair failed, each said in its line): no empty table either
        err.print(f"percentile: d among {sets:,} matched random pairs; fpr: their share with p <= {opts.alpha:g}; "
                  "random_d: their median d (random_low, random_high: 2.5%, 97.5%); d_x, d_y: X, Y against their own "
                  "random words", highlight=False)
        emit(pl.DataFrame(rows, schema=schema), fmt, keep=("test", "encoder", "d", "percentile", "fpr", "d_x", "d_y"))
    if report.failures:  # each said in its line already (on_failure)
        raise typer.Exit(1)


VerboseFamily = Annotated[bool, typer.Option("--verbose", "-v", help="The family's full definition on stderr.")]


results_app = typer.Typer(help="Results with a correction over a family; retire / unretire results.",
                          invoke_without_command=True, no_args_is_help=False)
app.add_typer(results_app, name="results")


@results_app.callback(invoke_without_command=True)
@handles_errors
def results_cmd(
    ctx: typer.Context,
    where: WhereOption = None,
    run: RunOption = None,
    correct: CorrectOption = None,
    alpha: ReadAlphaOption = None,
    include_stale: Annotated[bool, typer.Option("--include-stale", help="Also results on superseded set versions.")] = False,
    kind: Annotated[str, typer.Option("--kind", help=f"{choices(RESULT_KINDS)} (test: the tests you ran; all: every kind).")] = "test",
    fmt: Annotated[Optional[str], format_option("sentbias")] = None,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    table: Annotated[bool, typer.Option("--table", help="Tests x encoders with d and significance marks (Table 4 of May et al.).")] = False,
    layout: Annotated[Optional[str], typer.Option("--layout", help=f"{choices(LAYOUTS)} (tan-celis: Tables 7/8 of Tan & Celis 2019, tests x word/sent/c-word x encoders).")] = None,
    verbose: VerboseFamily = False,
    whole_store: Annotated[bool, typer.Option("--whole-store", help="In a study: the whole store's latest results, not the study's family alone.")] = False,
):
    """Results with a multiple-testing correction over a family of hypotheses, each counted once.

    The family is the latest result of each hypothesis (test on its set versions by role,
    encoder, context, alternative, balance, clustering, p-value procedure) that you tested, over
    the whole store; in a study, the study's own (its latest run's results, computed or reused
    unchanged; the store's other results are counted apart unless --whole-store); --where
    filters it and --run takes one run instead. Replicates never add to
    m; audits' per-template results (--kind audit) and retired results are not in it, and
    results on superseded set versions are left out (--include-stale shows them).

    A table shows test, encoder, context, d, its CI, p, adjusted p, the decision and the four
    sample sizes; to fit a narrow terminal it drops n, the CI and the context first and folds
    long names, never the decision columns. latex and markdown are tables for a paper
    (rounded, d with its marks, a caption with the family).

    Examples:
      stimkit results --correct holm --alpha 0.01
      stimkit results --columns test,encoder,d,p_adjusted --wide
      stimkit results --where "test LIKE 'sent-%'" --correct by --format json
      stimkit results --table --format latex > table4.tex
      stimkit results --format sentbias > results.tsv
    """
    from ..views import results as results_view
    from ..views.emit import default_format

    if ctx.invoked_subcommand is not None:
        return
    if correct is not None:
        check_correction(correct)
    if alpha is not None:
        check_alpha(alpha)
    if layout is not None and layout not in LAYOUTS:
        raise UsageError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    fmt = fmt or default_format()
    # A table, csv or tsv of the rows prints them as they come (plain.Rows): no polars frame, a
    # third of the start-up of a small store's reading.
    plain = fmt in results_view.ROWS_FORMATS and not (layout or table)
    with open_store(read_only=True) as store:  # what the user typed; the library fills in the study's
        read = store.result_rows if plain else store.results
        df = read(where, run, correct, alpha, include_stale, kind, study=current_study(), whole_store=whole_store)
        family = df.family
        correct, alpha = family.correction, family.alpha
        if layout:
            from ..catalog import definitions as catalog
            from ..study import study
            tests_def = catalog.load(store.con, store.catalog_dir)
            rows = list(study.load("tan-celis-2019").rows)
        elif table:
            from ..catalog import definitions as catalog
            catalog_tests = catalog.load_toml()
            view4 = table4_view(store, df, family.alpha, list(catalog.load(store.con, store.catalog_dir)))
    err.print(family_line(family, correct, alpha, verbose), highlight=False)
    for note in (family.drift_note, family.stale_note, family.mixed_note, family.outside_note):
        if note:
            err.print(note, highlight=False)
    if layout:
        from ..views import tancelis
        tancelis.show(tancelis.tan_celis(df, tests_def, rows), df, family, fmt)
    elif table:
        from ..views import table4
        table4.show(view4, df, family, fmt, table4.title(current_study(), df, catalog_tests))
    else:
        results_view.show(df, family, fmt, columns, wide)


@results_app.command("crows")
@handles_errors
def results_crows_cmd(
    run: Annotated[Optional[str], typer.Option("--run", help="One run's rows (a run id, or `latest`); default: the latest run of each test x encoder.")] = None,
    test: Annotated[Optional[str], typer.Option("--test", help="One CrowS test's rows.")] = None,
    splits: Annotated[str, typer.Option("--splits", help="all (every split), main (all pairs and the directions), or one split (e.g. bias:gender).")] = "all",
    fmt: Annotated[Optional[str], format_option()] = None,
    columns: Annotated[Optional[str], typer.Option("--columns", help="Columns to show, comma-separated.")] = None,
):
    """Stored CrowS-Pairs results: each scoring variant's metric score with its interval, by direction and bias type.

    Examples:
      stimkit results crows
      stimkit results crows --run latest --splits main -f csv
    """
    from .crows import show_results

    show_results(run, test, splits, fmt, columns)


@results_app.command("retire")
@handles_errors
def retire_cmd(
    where: Annotated[str, typer.Option("--where", help="SQL condition on the results to retire (e.g. \"test = 'weat1'\").")],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept with the results).")],
):
    """Take results out of every family (kept, with the reason; `unretire` brings them back).

    Example:
      stimkit results retire --where "test = 'weat3b'" --reason "stimuli mislabelled"
    """
    with open_store() as store:
        n = store.retire(where, reason)
    err.print(f"retired {_count(n, 'result')}", highlight=False)


@results_app.command("unretire")
@handles_errors
def unretire_cmd(
    where: Annotated[str, typer.Option("--where", help="SQL condition on the results to bring back.")],
):
    """Bring retired results back into the families.

    Example:
      stimkit results unretire --where "test = 'weat3b'"
    """
    with open_store() as store:
        n = store.unretire(where)
    err.print(f"unretired {_count(n, 'result')}", highlight=False)


@app.command("check")
@handles_errors
def check_cmd(
    where: WhereOption = None,
    run: RunOption = None,
    alpha: ReadAlphaOption = None,
    metrics: Annotated[bool, typer.Option("--metrics", help="How the association metrics agree: sign and decision per test and encoder, Kendall's tau per pair of metrics.")] = False,
    include_stale: Annotated[bool, typer.Option("--include-stale", help="Also results on superseded set versions.")] = False,
    fmt: Annotated[Optional[str], format_option()] = None,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    verbose: VerboseFamily = False,
    whole_store: Annotated[bool, typer.Option("--whole-store", help="In a study: the whole store's latest results, not the study's family alone.")] = False,
):
    """Consistency checks over the family: C7 vs C8, C3/C4/C5, word vs sentence, across encoders, human vs machine translation.

    Every comparison the family allows is listed with its verdict: a violation is a tested
    claim (the two d differ beyond their joint uncertainty, by a jackknife test on the stored
    s(w) with shared words deleted together; or both are significant with opposite signs);
    a note is what decision heuristics see (decisions either side of alpha, p orders apart);
    consistent; or not comparable (the partner named). Target sets whose words differ in
    grammatical gender composition (where the lists mark it) get a note. --metrics compares
    the metrics instead.

    Examples:
      stimkit check
      stimkit check --where "encoder LIKE 'minilm%'" --format json
    """
    from ..views import check as views_check
    from ..views.emit import default_format

    if alpha is not None:
        check_alpha(alpha)
    if metrics:
        with open_store(read_only=True) as store:
            agreement, tau = store.check_metrics(where, run, alpha, include_stale, current_study())
            family = agreement.family
        views_check.show_metrics(agreement, tau, family, fmt)
        return
    with open_store(read_only=True) as store:
        df = store.check(where, run, alpha, include_stale, current_study(), whole_store=whole_store)
        family = df.family
    if family.drift_note:
        err.print(family.drift_note, highlight=False)
    views_check.show(df, family, fmt or default_format(), columns, wide, verbose)


@app.command("query")
@handles_errors
def query_cmd(
    sql: Annotated[str, typer.Argument(help="A named query from queries/ (e.g. holm, consistency) or one reading SQL statement.")],
    param: Annotated[Optional[list[str]], typer.Option("--param", "-p", help="A named parameter NAME=VALUE, used as $NAME (repeatable).")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=0, help="Rows to print (default: 100 for tables, all otherwise).")] = None,
    where: WhereOption = None,
    run: RunOption = None,
    alpha: ReadAlphaOption = None,
    allow_files: Annotated[bool, typer.Option("--allow-files", help="Let the query read files on this machine (read_csv, read_parquet).")] = False,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Run a named query or one reading SQL statement on the store (opened read-only).

    The view `family` (see `results`) is defined first, so the named corrections work.
    Statements that write are refused; files on the host are out of reach unless --allow-files.

    Examples:
      stimkit query holm --format csv
      stimkit query "SELECT * FROM latest_results WHERE test = \\$t" --param t=sent-weat6
      stimkit query "SELECT stimulus, vector FROM stimulus_vectors WHERE encoder = 'glove-6b-50d'" --limit 5
    """
    from ..views.emit import default_format

    params = {}
    for p in param or []:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {p!r}: expected NAME=VALUE")
        params[key] = value
    with open_store(read_only=True, allow_files=allow_files) as store:
        df = store.query(sql, params, where, run, alpha, current_study())
    fmt = fmt or default_format()
    limit = limit if limit is not None else (100 if fmt == "table" else None)
    emit(df, fmt, limit=limit)


def table4_view(store, results, alpha: float, order: list[str], encoders: list[str] | None = None, study=None):
    """Table 4 of these results as the views layer renders it: encoders under the study's display
    names, rows headed by the tests' categories where it says `[table] heads = "category"`
    (`study`: the one run; default: the study in force)."""
    from ..analysis.families import categories
    from ..views import table4, text

    study = study if study is not None else current_study()
    heads = getattr(study, "heads", "test")
    found = categories(store.con) if heads == "category" else None
    names = {**text.display_names(results), **text.study_names(results["encoder"], getattr(study, "display", None))}
    return table4.table4(results, alpha, order, encoders, names=names, categories=found)


@app.command("init")
@handles_errors
def init_cmd(
    folder: Annotated[Path, typer.Argument(help="The new study's folder (made if missing; must not hold a study).")],
    name: Annotated[Optional[str], typer.Option("--name", help="The study's name (default: the folder's).")] = None,
):
    """Start a study of your own: word lists, a template set, a word and a sentence test, and a
    study file with every key commented. `cd FOLDER && stimkit run` then runs it as it is.

    Example:
      stimkit init religion && cd religion && stimkit run
    """
    from ..study.scaffold import init

    written = init(folder, name)
    for path in written:
        out.print(str(path), highlight=False, markup=False)
    err.print(f"a study in {folder}: `cd {folder} && stimkit run` runs it; edit {folder}/study.toml to make it yours",
              highlight=False)


@app.command("run")
@handles_errors
def run_cmd(
    study: Annotated[Optional[str], typer.Argument(
        help="A built-in study (may-2019, tan-celis-2019) or a study file (.toml). Default: the study found here "
             "(study.toml in this folder or the nearest above), else may-2019.")] = None,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoders (default: the study's).")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Permutation sample budget (default: the study's, else 100,000).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the permutation samples (default: the study's, else 0).")] = None,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Significance level, in (0, 1) (default: the study's).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="A line per test as it runs.")] = False,
    paper: Annotated[Optional[str], typer.Option("--paper", help="The same as naming a built-in study: may-2019 | tan-celis-2019.")] = None,
    override: OverrideOption = False,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Run a study: its tests on its encoders in one run, its correction, its table.

    The published papers are built-in studies: may-2019 (the 46 SEAT tests on the embedded
    encoders, Holm at 0.01 over all rows, Table 4, the consistency checks and the WEFATs) and
    tan-celis-2019 (word, sent and c-word; Tables 7 and 8). Sets a study needs are generated.

    Examples:
      stimkit run
      stimkit run -e glove-6b-50d --budget 10000
      stimkit run tan-celis-2019 --format markdown
    """
    from ..views import table4, tancelis

    if study and paper and study != paper:
        raise UsageError(f"name one study: {study!r} or --paper {paper!r}")
    overrides = {k: v for k, v in {"budget": budget, "seed": seed, "alpha": alpha}.items() if v is not None}
    with open_store(override=override) as store:
        bar, callbacks = progress_callbacks(verbose)
        with bar:
            job = store.run(study or paper or current_study() or DEFAULT_PAPER, encoder,
                            command=invocation(), **overrides, **callbacks)
        if job.results is not None:
            view = run_view(store, job)
    s, alpha = job.study, job.family.alpha if job.family is not None else overrides.get("alpha", job.study.alpha)
    if job.results is None:
        finish(job.run)
        return
    warn_cannot_reject(job.run, alpha)
    if s.layout == "tan-celis":
        tancelis.show_run(view, job.results, job.family, s, alpha, fmt)
    else:
        table4.show(view, job.results, job.family, fmt, table4.title(s), summary=job.run.run_id)
    finish(job.run, summary=True, closing=lambda: run_summary(job, alpha))


def run_view(store, job):
    """The run's table, rendered by the views layer: Table 4, or Tan and Celis's Tables 7-8."""
    if job.study.layout == "tan-celis":
        from ..catalog import definitions as catalog
        from ..views import tancelis

        order = list(dict.fromkeys(r.encoder for r in job.run.results))
        return tancelis.tan_celis(job.results, catalog.load(store.con, store.catalog_dir), list(job.study.rows), order)
    order = list(dict.fromkeys(r.encoder for r in job.run.results))
    return table4_view(store, job.results, job.family.alpha, job.tests, order, study=job.study)


def run_summary(job, alpha: float) -> None:
    """Beside the run's table, counts only (the details stay in `check`, `results`, the report),
    each with the command that lists them: sentence-only results, inconsistencies, WEFATs."""
    from ..views.text import SENTENCES_ONLY

    r = job.results
    if "sentences_only" in r.columns and r["sentences_only"].fill_null(False).any():
        n = int(r["sentences_only"].fill_null(False).sum())
        err.print(f"{_count(n, 'result')} significant only with sentences as units ({SENTENCES_ONLY}): "
                  f"`stimkit results --run {job.run.run_id} --columns test,encoder,d,p_value,flags` lists them",
                  highlight=False)
    if job.checks is not None:
        violations = int((job.checks["verdict"] == "violation").sum()) if job.checks.height else 0
        notes = int((job.checks["verdict"] == "note").sum()) if job.checks.height else 0
        err.print(f"{_count(violations, 'tested consistency violation')}, {_count(notes, 'note')} in "
                  f"{_count(job.checks.height, 'comparison')}: `stimkit check --run {job.run.run_id}` lists them",
                  highlight=False)
    if job.run.wefats:
        err.print(f"{_count(len(job.run.wefats), 'WEFAT')} (queries/wefat.toml): `stimkit wefat-results` lists them",
                  highlight=False)
    failed = f"; {_count(len(job.run.failures), 'failure')}" if job.run.failures else ""
    err.print(f"run {job.run.run_id} in {job.seconds:.1f}s; {job.results['rejected'].sum()} of {job.family.m} "
              f"significant after {job.study.correction} at {alpha}{failed}. Store: {db_path()}", highlight=False)
