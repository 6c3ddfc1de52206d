"""Commands over tests and results: test, results, check, query, run (parse, call the library, print)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import DEFAULT_BUDGET, DEFAULT_PAPER, UsageError
from .common import (OverrideOption, TemplateDirOption, WordlistDirOption, app, check_alpha, check_correction,
                     count as _count, db_path, emit, emit_document, err, family_line, format_option, handles_errors,
                     open_store, print_rows)

AlphaOption = Annotated[float, typer.Option("--alpha", help="Significance level, in (0, 1).")]
RunOption = Annotated[Optional[str], typer.Option(
    "--run", help="One run's results (a run id, or `latest`) instead of the latest result of every hypothesis in the store.")]
WhereOption = Annotated[Optional[str], typer.Option("--where", help="SQL condition that filters the family (one expression).")]


def progress_callbacks(verbose: bool):
    """Progress bar, a line per result (verbose) and a line per failure, all on stderr."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..output import p_text, with_interval
    from .encode import progress_for

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=err, transient=True, disable=verbose or not err.is_terminal)
    task = bar.add_task("tests", total=None)

    def on_result(r, done, total):
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
            err.print(f"[{done}/{total}] {r.test:<45} {r.encoder:<22} {value} p{'' if p.startswith('<') else '='}{p} "
                      f"({r.p_method or r.p_null_reason}) n={r.n_x}/{r.n_y}/{r.n_a}/{r.n_b}"
                      + (f"  [{'; '.join(notes)}]" if notes else ""), highlight=False)

    def on_failure(f):
        err.print(f"failed: {f}", style="red", highlight=False)

    return bar, {"progress": progress_for, "on_result": on_result, "on_failure": on_failure}


def emit_rows(rows: list[dict], columns: list[str], title: str, fmt: str | None) -> None:
    """A table of rows (Table 4): a rich table, or any other format of the output layer."""
    from ..output import default_format

    if (fmt or default_format()) == "table":
        print_rows(rows, columns, title)
    else:
        import polars as pl

        err.print(title, highlight=False)
        emit(pl.DataFrame([{c: r.get(c) for c in columns} for r in rows], schema={c: pl.String for c in columns}), fmt)


def warn_cannot_reject(report, alpha: float) -> None:
    weak = report.cannot_reject
    if weak:
        tests = sorted({r.test for r in weak})
        names = ", ".join(tests[:5]) + (", ..." if len(tests) > 5 else "")
        err.print(f"warning: {_count(len(weak), 'result')} cannot reach p <= {alpha} whatever the data "
                  f"(smallest possible p above alpha; marked † in tables): {names}", highlight=False)


def finish(report) -> None:
    """The run's notes and summary line; exit 1 when any test or encoder failed."""
    for note in report.notes:
        err.print(note, highlight=False)
    if report.run_id:
        err.print(f"run {report.run_id}: {_count(len(report.results), 'result')} from {_count(report.n_tests, 'test')} x "
                  f"{_count(report.n_encoders, 'encoder')}, {_count(len(report.failures), 'failure')}. "
                  f"See `stimkit results --run {report.run_id}`.", highlight=False)
    if report.failures:
        if not report.run_id and len(report.failures) > 1:  # a single failure has said it all in its line
            err.print(f"nothing stored: {_count(len(report.failures), 'failure')}", highlight=False)
        raise typer.Exit(1)


@app.command("test")
@handles_errors
def test_cmd(
    patterns: Annotated[Optional[list[str]], typer.Argument(
        help="Tests by name or shell-style pattern over catalog and imported tests ('sent-weat*', '*angry*').")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every test: the catalog and imported ones.")] = False,
    source: Annotated[Optional[str], typer.Option("--source", help="Only catalog or only imported tests.")] = None,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoder spec (repeatable).")] = None,
    x: Annotated[Optional[str], typer.Option("--x", help="Ad-hoc test: SQL or set name for the target set X.")] = None,
    y: Annotated[Optional[str], typer.Option("--y", help="Ad-hoc test: SQL or set name for the target set Y.")] = None,
    a: Annotated[Optional[str], typer.Option("--a", help="Ad-hoc test: SQL or set name for the attribute set A.")] = None,
    b: Annotated[Optional[str], typer.Option("--b", help="Ad-hoc test: SQL or set name for the attribute set B.")] = None,
    name: Annotated[str, typer.Option("--name", help="Name of the ad-hoc test (stored: `stimkit test NAME` runs it again).")] = "adhoc",
    save: Annotated[Optional[Path], typer.Option("--save", help="Write the test's definition as TOML (for a --catalog-dir folder).")] = None,
    context: Annotated[Optional[str], typer.Option("--context", help="word | sentence | c-word (a sentence test's inserted word) | c-word:<slot> (that slot's word of a multi-slot set); default: the test's own; an ad-hoc test of four list@word sets is word.")] = None,
    budget: Annotated[int, typer.Option("--budget", help="Permutation sample budget.")] = DEFAULT_BUDGET,
    method: Annotated[str, typer.Option("--method", help="auto | exact | sampled | parametric.")] = "auto",
    alternative: Annotated[Optional[str], typer.Option("--alternative", help="greater | less | two-sided (default: the test's own, else greater).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the permutation samples and bootstrap draws (never of the cut).")] = 0,
    clustered: Annotated[bool, typer.Option("--clustered", help="Permute whole words with all their sentences.")] = False,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for a CI of d (0: none).")] = 0,
    balance: Annotated[Optional[str], typer.Option("--balance", help="cut | drop-words | none (default: the test's).")] = None,
    cut_seed: Annotated[int, typer.Option("--cut-seed", help="Which items balance=cut drops (default 0: fixed per test).")] = 0,
    cuts: Annotated[int, typer.Option("--cuts", help="Also run K independent cuts and store the spread of d and p.")] = 1,
    alpha: AlphaOption = 0.01,
    center: Annotated[Optional[str], typer.Option("--center", help="Centre the vectors before cosines: mean | abtt:K (also remove the reference's top K directions).")] = None,
    center_ref: Annotated[str, typer.Option("--center-ref", help="The centring reference: test (the test's own four sets) or a set name or SELECT.")] = "test",
    metric: Annotated[Optional[str], typer.Option("--metric", help="Association metrics, comma-separated: weat, gweat, ripa, rnd, semaxis, ect, rnsb, mac, same, direct_bias (one result each; default: the test's own, else weat).")] = None,
    wordlist_dir: WordlistDirOption = None,
    template_dir: TemplateDirOption = None,
    override: OverrideOption = False,
    verbose: Annotated[bool, typer.Option("--verbose/--quiet", "-v/-q", help="A line per result.")] = True,
):
    """Run association tests (catalog, imported or ad-hoc) for one or more encoders; results go to the store.

    Examples:
      stimkit test weat6 sent-weat6 -e glove-6b-50d -e use-m3
      stimkit test 'sent-weat*' -e minilm --cuts 20
      stimkit test sent-weat1 --context c-word -e minilm
    """
    from ..run.options import Options

    from ..stats.metrics import parse_metrics

    opts = Options(budget=budget, method=method, alternative=alternative, seed=seed, clustered=clustered,
                   bootstrap=bootstrap, balance=balance, cut_seed=cut_seed, cuts=cuts, alpha=alpha,
                   metrics=tuple(parse_metrics(metric)) if metric else None, center=center, center_ref=center_ref)
    with open_store(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override) as store:
        bar, callbacks = progress_callbacks(verbose)
        with bar:
            report = store.test(patterns, encoders=encoder or ["glove-6b-50d"], everything=everything, source=source,
                                x=x, y=y, a=a, b=b, name=name, context=context, command=" ".join(sys.argv[1:]),
                                options=opts, save=save, **callbacks)
    warn_cannot_reject(report, alpha)
    finish(report)


ColumnsOption = Annotated[Optional[str], typer.Option(
    "--columns", "-c", help="Columns to print, comma-separated, in this order (any column of the results, "
                            "or d, ci, n); default: the reading set on a terminal, every column in csv/tsv/json/ndjson/parquet.")]
WideOption = Annotated[bool, typer.Option("--wide", "--all-columns", help="Every column, also in a table.")]
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
    correct: Annotated[str, typer.Option("--correct", help="Multiple-testing correction: holm | bonferroni | bh | by | none.")] = "holm",
    alpha: AlphaOption = 0.01,
    include_stale: Annotated[bool, typer.Option("--include-stale", help="Also results on superseded set versions.")] = False,
    kind: Annotated[str, typer.Option("--kind", help="test (the tests you ran) | audit | compare | all.")] = "test",
    fmt: Annotated[Optional[str], format_option("sentbias")] = None,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    table: Annotated[bool, typer.Option("--table", help="Tests x encoders with d and significance marks (Table 4 of May et al.).")] = False,
    layout: Annotated[Optional[str], typer.Option("--layout", help="tan-celis: Tables 7/8 of Tan & Celis 2019 (tests x word/sent/c-word x encoders).")] = None,
    verbose: VerboseFamily = False,
):
    """Results with a multiple-testing correction over a family of hypotheses, each counted once.

    The family is the latest result of each hypothesis (test on its set versions, encoder,
    context, alternative, balance, clustering, p-value procedure) that you tested, over the
    whole store; --where filters it and --run takes one run instead. Replicates never add to
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
    from ..analysis import paper_tables as paper, tables
    from ..output import MACHINE_FORMATS, default_format

    if ctx.invoked_subcommand is not None:
        return
    check_correction(correct)
    check_alpha(alpha)
    if layout not in (None, "tan-celis"):
        raise UsageError(f"unknown layout {layout!r} (known: tan-celis)")
    fmt = fmt or default_format()
    with open_store(read_only=True) as store:
        df = store.results(where, run, correct, alpha, include_stale, kind)
        family = store.family
        tests_order = None
        if layout:
            from ..catalog import tests as catalog
            from ..study import study
            tests_def = catalog.load(store.con)
            rows = list(study.load("tan-celis-2019").rows)
        elif table:
            from ..catalog import tests as catalog
            tests_order = list(catalog.load_toml())
    err.print(family_line(family, correct, alpha, verbose), highlight=False)
    for note in (family.stale_note, family.mixed_note):
        if note:
            err.print(note, highlight=False)
    marks = f"* p <= {alpha}; ** also after {correct} correction; † cannot reach p <= {alpha}"
    if layout:
        frame = tables.tan_celis(df, tests_def, rows)
        if fmt in ("latex", "markdown"):
            sys.stdout.write(paper.tancelis_table(
                frame, fmt, paper.caption(family, correct, alpha, "Effect size d (Tan and Celis 2019, Tables 7-8); c-word vs "
                                                                  "sent: ✓ significant for c-word only, ✗ sent only, ▲ both; "
                                                                  "brackets: the 95% interval of d"),
                paper.display_names(df)))
        else:
            emit(frame, fmt)
    elif table:
        if fmt in ("latex", "markdown"):
            sys.stdout.write(paper.table4_paper(df, alpha, fmt, paper.caption(family, correct, alpha, "Effect size d by test "
                                                                              "and encoder (May et al. 2019, Table 4)"),
                                                paper.display_names(df), tests_order))
        else:
            t4 = paper.table4(df, alpha, tests_order)
            import polars as pl
            columns, rows = t4.grid()
            grid = pl.DataFrame(rows, schema={c: pl.String for c in columns})
            err.print(f"d by test and encoder; {marks}" + ("; [95% interval of d]" if t4.ci else "")
                      + (f"; {t4.note}" if t4.note else ""), highlight=False)
            emit(grid, fmt, keep=tuple(grid.columns))  # every encoder's column: names fold, none is dropped
    elif fmt == "sentbias":
        sys.stdout.write(tables.sentbias_rows(df).write_csv(separator="\t", quote_style="never"))
    else:
        view = paper.results_view(df) if fmt not in MACHINE_FORMATS or columns else df
        chosen = paper.choose_columns(view, columns, None if wide or fmt in MACHINE_FORMATS else
                                      list(paper.PAPER_COLUMNS if fmt in ("latex", "markdown") else paper.read_columns(view)))
        if fmt in ("latex", "markdown"):
            sys.stdout.write(paper.paper_table(df, chosen or list(view.columns), fmt, paper.caption(family, correct, alpha),
                                               paper.display_names(df), alpha=alpha))
        elif fmt == "json":
            emit_document({"family": family.as_dict(), "correction": {"method": correct, "alpha": alpha}}, view, fmt, chosen)
        else:
            emit(view, fmt, chosen, keep=paper.KEEP_COLUMNS, drop_first=paper.DROP_FIRST, stack=paper.STACK)


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
    alpha: AlphaOption = 0.01,
    metrics: Annotated[bool, typer.Option("--metrics", help="How the association metrics agree: sign and decision per test and encoder, Kendall's tau per pair of metrics.")] = False,
    include_stale: Annotated[bool, typer.Option("--include-stale", help="Also results on superseded set versions.")] = False,
    fmt: Annotated[Optional[str], format_option()] = None,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    verbose: VerboseFamily = False,
):
    """Consistency checks over the family: C7 vs C8, C3/C4/C5, word vs sentence, across encoders.

    Every comparison the family allows is listed with its verdict: a violation is a tested
    claim (the two d differ beyond their joint uncertainty, by a jackknife test on the stored
    s(w) with shared words deleted together; or both are significant with opposite signs);
    a note is what decision heuristics see (decisions either side of alpha, p orders apart);
    consistent; or not comparable (the partner named). --metrics compares the metrics instead.

    Examples:
      stimkit check
      stimkit check --where "encoder LIKE 'minilm%'" --format json
    """
    check_alpha(alpha)
    if metrics:
        with open_store(read_only=True) as store:
            agreement, tau = store.check_metrics(where, run, alpha, include_stale)
            family = store.family
        if fmt == "json":
            emit_document({"family": family.as_dict(), "alpha": alpha, "kendall_tau": tau.to_dicts()}, agreement, fmt)
        else:
            emit(agreement, fmt)
            if tau.height:
                err.print("Kendall's tau between metrics (bias strength over the family's tests and encoders):",
                          highlight=False)
                emit(tau, "table", stream=sys.stderr)
        err.print(f"{_count(agreement.height, 'test-encoder pair')} compared across metrics; m = {family.m}", highlight=False)
        return
    with open_store(read_only=True) as store:
        df = store.check(where, run, alpha, include_stale)
        family = store.family
    from ..analysis.paper_tables import choose_columns
    from ..output import MACHINE_FORMATS, default_format

    fmt = fmt or default_format()
    n = {v: int((df["verdict"] == v).sum()) for v in ("violation", "note", "not comparable")} if df.height else {}
    summary = (f"{_count(df.height, 'comparison')}, {_count(n.get('violation', 0), 'violation')} (tested), "
               f"{_count(n.get('note', 0), 'note')}, {n.get('not comparable', 0)} not comparable; "
               f"{family_line(family, verbose=verbose)}")
    # the ids of the results compared are for programs (and --columns); a person reads the rest
    reading = None if wide or fmt in MACHINE_FORMATS else [c for c in df.columns if c != "result_ids"]
    chosen = choose_columns(df, columns, reading)
    if fmt == "json":
        emit_document({"family": family.as_dict(), "alpha": alpha, "comparisons": df.height,
                       "violations": n.get("violation", 0), "notes": n.get("note", 0)}, df, fmt, chosen)
    elif df.height:
        emit(df, fmt, chosen, keep=("check_name", "verdict"))
    err.print(summary, highlight=False)


@app.command("query")
@handles_errors
def query_cmd(
    sql: Annotated[str, typer.Argument(help="A named query from queries/ (e.g. holm, consistency) or one reading SQL statement.")],
    param: Annotated[Optional[list[str]], typer.Option("--param", "-p", help="A named parameter NAME=VALUE, used as $NAME (repeatable).")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=0, help="Rows to print (default: 100 for tables, all otherwise).")] = None,
    where: WhereOption = None,
    run: RunOption = None,
    alpha: AlphaOption = 0.01,
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
    from ..output import default_format

    params = {}
    for p in param or []:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {p!r}: expected NAME=VALUE")
        params[key] = value
    with open_store(read_only=True, allow_files=allow_files) as store:
        df = store.query(sql, params, where, run, alpha)
    fmt = fmt or default_format()
    limit = limit if limit is not None else (100 if fmt == "table" else None)
    emit(df, fmt, limit=limit)


@app.command("run")
@handles_errors
def run_cmd(
    study: Annotated[Optional[str], typer.Argument(
        help="A built-in study (may-2019, tan-celis-2019) or a study file (.toml). Default: may-2019.")] = None,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoders (default: the study's).")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Permutation sample budget (default: the study's, else 100,000).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the permutation samples (default: the study's, else 0).")] = None,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Significance level, in (0, 1) (default: the study's).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="A line per test as it runs.")] = False,
    paper: Annotated[Optional[str], typer.Option("--paper", help="The same as naming a built-in study: may-2019 | tan-celis-2019.")] = None,
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
    if study and paper and study != paper:
        raise UsageError(f"name one study: {study!r} or --paper {paper!r}")
    overrides = {k: v for k, v in {"budget": budget, "seed": seed, "alpha": alpha}.items() if v is not None}
    with open_store() as store:
        bar, callbacks = progress_callbacks(verbose)
        with bar:
            job = store.run(study or paper or DEFAULT_PAPER, encoder,
                            command=" ".join(["run", *sys.argv[2:]]), **overrides, **callbacks)
    s, alpha = job.study, overrides.get("alpha", job.study.alpha)
    if job.results is None:
        finish(job.run)
        return
    warn_cannot_reject(job.run, alpha)
    from ..analysis import paper_tables as paper

    if s.layout == "tan-celis":
        title = (f"{s.name}: d by test, encoding and encoder; * significant after {s.correction} at {alpha}; "
                 "c-word vs sent: ✓ c-word only, ✗ sent only, ▲ both; [95% interval of d]")
        if fmt in ("latex", "markdown"):  # a paper's table: booktabs or pipes, with its caption
            import polars as pl
            frame = pl.DataFrame(job.table, schema={c: pl.String for c in job.columns})
            sys.stdout.write(paper.tancelis_table(frame, fmt, paper.caption(job.family, s.correction, alpha, title),
                                                  paper.display_names(job.results)))
        else:
            emit_rows(job.table, job.columns, title, fmt)
    else:
        title = (f"Effect size d [95% interval]; * p <= {alpha}; ** significant after {s.correction} "
                 f"over all {job.family.m} rows")
        if fmt in ("latex", "markdown"):
            order = [row["test"] for row in job.table]
            sys.stdout.write(paper.table4_paper(job.results, alpha, fmt, paper.caption(job.family, s.correction, alpha,
                                                                                       "Effect size d by test and encoder"),
                                                paper.display_names(job.results), order))
        else:
            emit_rows(job.table, job.columns, title, fmt)
    if job.checks is not None:
        violations = job.checks.filter(job.checks["verdict"] == "violation") if job.checks.height else job.checks
        notes = int((job.checks["verdict"] == "note").sum()) if job.checks.height else 0
        err.print(f"\n{violations.height} tested consistency violations, {notes} notes in {job.checks.height} "
                  "comparisons (stimkit check):", highlight=False)
        if violations.height:
            emit(violations.drop("verdict", "result_ids"), "table", stream=sys.stderr)
    if job.run.wefats:
        from .wefat import summary_line
        err.print("\nWEFAT (queries/wefat.toml):", highlight=False)
        for row in job.run.wefats:
            err.print(summary_line(row), highlight=False)
    err.print(f"\nrun {job.run.run_id} in {job.seconds:.1f}s; {job.results['rejected'].sum()} of {job.family.m} "
              f"significant after {s.correction} at {alpha}. Store: {db_path()}", highlight=False)
    finish(job.run)
