"""Commands over tests and results: test, results, check, query, run."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .. import UsageError, analysis, catalog, cword, generate, runner, stats, tancelis, wordlists
from .common import app, count as _count, db_path, emit, emit_document, err, handles_errors, open_store, out, print_rows
from .encode import encode_with_progress

DEFAULT_ENCODERS = ["glove-6b-50d", "minilm", "minilm,pooling=cls", "use-m3"]

AlphaOption = Annotated[float, typer.Option("--alpha", help="Significance level, in (0, 1).")]
RunOption = Annotated[Optional[str], typer.Option(
    "--run", help="One run's results (a run id, or `latest`) instead of the latest result of every hypothesis in the store.")]
WhereOption = Annotated[Optional[str], typer.Option("--where", help="SQL condition that filters the family (one expression).")]


def run_tests(con, tests: list, encoder_specs: list[str], opts: runner.Options, command: str,
              verbose: bool = True) -> runner.RunReport:
    """Run the tests with progress and one line per failure on stderr; warn once about
    results that cannot reject at alpha."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    def encode(con, enc, stimuli):
        r = encode_with_progress(con, enc, stimuli, 256)
        err.print(f"encoded {r['encoder']}: {r['cached']} cached, {r['encoded']} new in {r['seconds']:.1f}s", highlight=False)

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=err, transient=True, disable=verbose or not err.is_terminal)
    task = bar.add_task("tests", total=None)

    def on_result(row, done, total):
        bar.update(task, completed=done, total=total, description=f"{row['test']} / {row['encoder']}")
        if verbose:
            notes = [f"{row['n_dropped_oov']} stimuli without a vector dropped"] if row["n_dropped_oov"] else []
            if row["n_balanced_away"]:
                notes.append(f"{row['n_balanced_away']} cut by balance={row['balance']}")
            if row.get("cuts"):
                notes.append(f"{row['cuts']} cuts: d {row['cut_d_min']:+.2f}..{row['cut_d_max']:+.2f}, "
                             f"{row['cut_reject_share']:.0%} reject")
            err.print(f"[{done}/{total}] {row['test']:<45} {row['encoder']:<22} d={row['effect_size']:+.3f} "
                      f"p={row['p_value']:.3g} ({row['p_method']}) n={row['n_x']}/{row['n_y']}/{row['n_a']}/{row['n_b']}"
                      + (f"  [{'; '.join(notes)}]" if notes else ""), highlight=False)

    def on_failure(f):
        err.print(f"failed: {f}", style="red", highlight=False, markup=False)

    with bar:
        report = runner.run_tests(con, tests, encoder_specs, opts, command, encode, on_result, on_failure)
    weak = report.cannot_reject
    if weak:
        names = ", ".join(sorted({r["test"] for r in weak})[:5]) + (", ..." if len({r["test"] for r in weak}) > 5 else "")
        err.print(f"warning: {_count(len(weak), 'result')} cannot reach p <= {opts.alpha} whatever the data "
                  f"(smallest possible p above alpha; marked † in tables): {names}", highlight=False, markup=False)
    return report


def finish(report: runner.RunReport, n_tests: int, n_encoders: int) -> None:
    """The run's summary line; exit 1 when any test or encoder failed."""
    if report.run_id:
        err.print(f"run {report.run_id}: {_count(len(report.rows), 'result')} from {_count(n_tests, 'test')} x "
                  f"{_count(n_encoders, 'encoder')}, {_count(len(report.failures), 'failure')}. "
                  f"See `stimkit results --run {report.run_id}`.", highlight=False, markup=False)
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
    x: Annotated[Optional[str], typer.Option("--x", help="Ad-hoc test: SQL or set name for X.")] = None,
    y: Annotated[Optional[str], typer.Option("--y")] = None,
    a: Annotated[Optional[str], typer.Option("--a")] = None,
    b: Annotated[Optional[str], typer.Option("--b")] = None,
    name: Annotated[str, typer.Option("--name", help="Name of the ad-hoc test.")] = "adhoc",
    context: Annotated[Optional[str], typer.Option("--context", help="word | sentence | c-word (a sentence test's inserted word; default: the test's own).")] = None,
    budget: Annotated[int, typer.Option("--budget", help="Permutation sample budget.")] = stats.DEFAULT_BUDGET,
    method: Annotated[str, typer.Option("--method", help="auto | exact | sampled | parametric.")] = "auto",
    alternative: Annotated[str, typer.Option("--alternative", help="greater | less | two-sided.")] = "greater",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the permutation samples and bootstrap draws (never of the cut).")] = 0,
    clustered: Annotated[bool, typer.Option("--clustered", help="Permute whole words with all their sentences.")] = False,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for a CI of d (0: none).")] = 0,
    balance: Annotated[Optional[str], typer.Option("--balance", help="cut | drop-words | none (default: the test's).")] = None,
    cut_seed: Annotated[int, typer.Option("--cut-seed", help="Which items balance=cut drops (default 0: fixed per test).")] = 0,
    cuts: Annotated[int, typer.Option("--cuts", min=1, help="Also run K independent cuts and store the spread of d and p.")] = 1,
    alpha: AlphaOption = 0.01,
):
    """Run association tests (catalog, imported or ad-hoc) for one or more encoders; results go to the store.

    Example: stimkit test 'sent-weat*' -e minilm --cuts 20
    """
    con = open_store()
    adhoc = [x, y, a, b]
    if any(adhoc):
        if not all(adhoc):
            raise UsageError("an ad-hoc test needs all four of --x --y --a --b")
        tests = [catalog.TestDef(name, tuple(adhoc), context or "sentence", None, balance or "none", source="adhoc")]
    elif patterns or everything:
        tests = [cword.in_context(t, context) for t in catalog.select(con, patterns, everything, source)]
    else:
        raise UsageError("name tests (or patterns), or pass --all, or give an ad-hoc test with --x --y --a --b")
    opts = runner.Options(budget=budget, method=method, alternative=alternative, seed=seed, clustered=clustered,
                          bootstrap=bootstrap, balance=balance, cut_seed=cut_seed, cuts=cuts, alpha=alpha)
    opts.validate()
    specs = encoder or ["glove-6b-50d"]
    report = run_tests(con, tests, specs, opts, " ".join(sys.argv[1:]))
    finish(report, len(tests), len(specs))


def emit_with_family(df, fmt: str, family: analysis.Family, extra: dict, columns: list[str] | None = None) -> None:
    """Rows, with the family and the correction's own parameters: in the JSON document,
    or on stderr for the other formats."""
    if fmt == "json":
        emit_document({"family": family.as_dict(), **extra}, df, fmt)
    else:
        emit(df, fmt, columns)


RESULT_COLUMNS = ["test", "encoder", "context", "n_x", "n_y", "n_a", "n_b",
                  "effect_size", "p_value", "p_method", "p_adjusted", "rejected", "can_reject"]


@app.command("results")
@handles_errors
def results_cmd(
    where: WhereOption = None,
    run: RunOption = None,
    correct: Annotated[str, typer.Option("--correct", help="holm | bh | by | none.")] = "holm",
    alpha: AlphaOption = 0.01,
    fmt: Annotated[str, typer.Option("--format", help="table | csv | json | sentbias.")] = "table",
    table: Annotated[bool, typer.Option("--table", help="Tests x encoders with d and significance marks (Table 4 of May et al.).")] = False,
    layout: Annotated[Optional[str], typer.Option("--layout", help="tan-celis: Tables 7/8 of Tan & Celis 2019 (tests x word/sent/c-word x encoders).")] = None,
):
    """Results with a multiple-testing correction over a family of hypotheses, each counted once.

    The family is the latest result of each hypothesis (test, encoder, context, alternative,
    balance, clustering, p-value procedure) over the whole store; --where filters it and
    --run takes one run instead. Replicates never add to m.

    Example: stimkit results --where "test LIKE 'sent-%'" --correct by --format json
    """
    con = open_store()
    family = analysis.define_family(con, where, alpha, run)
    df = analysis.corrected(con, correct)
    err.print(f"family: {family.definition}; m = {family.m}; {correct} at alpha {alpha}", highlight=False, markup=False)
    if layout not in (None, "tan-celis"):
        raise UsageError(f"unknown layout {layout!r} (known: tan-celis)")
    if layout:
        emit(tancelis.layout(df, catalog.load(con)), fmt)
    elif table:
        columns, rows = analysis.table4(df, alpha, list(catalog.load_toml()))
        print_rows(rows, columns, title=f"d by test and encoder; * p <= {alpha}, ** also after {correct} correction "
                                        f"over m = {family.m}; † cannot reach p <= {alpha}")
    elif fmt == "sentbias":
        sys.stdout.write(analysis.sentbias_rows(df).write_csv(separator="\t", quote_style="never"))
    else:
        emit_with_family(df, fmt, family, {"correction": {"method": correct, "alpha": alpha}},
                         RESULT_COLUMNS if fmt == "table" else None)


@app.command("check")
@handles_errors
def check_cmd(
    where: WhereOption = None,
    run: RunOption = None,
    alpha: AlphaOption = 0.01,
    fmt: Annotated[str, typer.Option("--format")] = "table",
):
    """Consistency checks over the family: C7 vs C8, C3/C4/C5, word vs sentence, across encoders.

    Every comparison the family allows is listed with its verdict: consistent, violation,
    or not comparable (and why). Heuristic checks are marked as such.

    Example: stimkit check --format json
    """
    con = open_store()
    family = analysis.define_family(con, where, alpha, run, allow_empty=True)
    df = analysis.consistency(con)
    n = {v: int((df["verdict"] == v).sum()) for v in ("consistent", "violation", "not comparable")} if df.height else {}
    summary = (f"{_count(df.height, 'comparison')}, {_count(n.get('violation', 0), 'violation')}, "
               f"{n.get('not comparable', 0)} not comparable; family: {family.definition}; m = {family.m}")
    if fmt == "json":
        emit_with_family(df, fmt, family, {"alpha": alpha, "comparisons": df.height, "violations": n.get("violation", 0)})
    elif df.height:
        emit(df, fmt)
    err.print(summary, highlight=False, markup=False)


@app.command("query")
@handles_errors
def query_cmd(
    sql: Annotated[str, typer.Argument(help="A named query from queries/ (e.g. holm, consistency) or any SQL.")],
    where: WhereOption = None,
    run: RunOption = None,
    alpha: AlphaOption = 0.01,
    fmt: Annotated[str, typer.Option("--format")] = "table",
):
    """Run a named query or any SQL against the store.

    Example: stimkit query holm --format csv
    """
    con = open_store()
    text = analysis.named_query(sql)
    analysis.define_family(con, where, alpha, run, allow_empty=True)
    emit(analysis.run_sql(con, text or sql), fmt)


@app.command("run")
@handles_errors
def run_cmd(
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoders (default: the embedded four).")] = None,
    budget: Annotated[int, typer.Option("--budget")] = stats.DEFAULT_BUDGET,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    alpha: AlphaOption = 0.01,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="A line per test as it runs.")] = False,
    paper: Annotated[str, typer.Option("--paper", help="may-2019 (Table 4) | tan-celis-2019 (Tables 7 and 8).")] = catalog.DEFAULT_PAPER,
    fmt: Annotated[str, typer.Option("--format", help="Output format of the Tan & Celis table.")] = "table",
):
    """The main job: generate the catalog, encode, run all 46 tests per encoder, Holm at alpha, Table 4, checks.
    With --paper tan-celis-2019: Tan & Celis's tests in word, sent and c-word, and their Tables 7 and 8.

    Example: stimkit run -e glove-6b-50d
    """
    import time
    started = time.perf_counter()
    analysis.validate_alpha(alpha)
    con = open_store()
    if paper == tancelis.PAPER:
        return run_tan_celis(con, encoder, budget, seed, alpha, fmt, started)
    catalog.by_paper(catalog.load_toml(), paper)  # an unknown paper is refused
    lists = wordlists.load_all()
    report = generate.generate(con, catalog.default_specs(lists), lists)
    err.print(f"stimuli: {sum(r['status'] == 'new' for r in report)} new sets, {len(report)} in all", highlight=False)
    specs = encoder or DEFAULT_ENCODERS
    tests = list(catalog.by_paper(catalog.load_toml(), catalog.DEFAULT_PAPER).values())
    opts = runner.Options(budget=budget, seed=seed, alpha=alpha)
    run = run_tests(con, tests, specs, opts, "run", verbose=verbose)
    if not run.run_id:
        finish(run, len(tests), len(specs))
    family = analysis.define_family(con, None, alpha, run.run_id)
    df = analysis.corrected(con, "holm")
    columns, rows = analysis.table4(df, alpha, list(catalog.load_toml()), [r["encoder"] for r in run.rows])
    print_rows(rows, columns, title=f"Effect size d; * p <= {alpha}; ** significant after Holm over all {family.m} rows")
    checks = analysis.consistency(con)
    violations = checks.filter(checks["verdict"] == "violation") if checks.height else checks
    out.print(f"\n{violations.height} consistency violations in {checks.height} comparisons (queries/consistency.sql):",
              highlight=False)
    if violations.height:
        emit(violations.drop("verdict"), "table")
    from .wefat import run_catalog as run_wefat_catalog
    out.print("\nWEFAT (queries/wefat.toml):", highlight=False)
    run_wefat_catalog(con, specs, budget, seed, run.run_id)
    out.print(f"\nrun {run.run_id} in {time.perf_counter() - started:.1f}s; {df['rejected'].sum()} of {df.height} "
              f"significant after Holm at {alpha}. Store: {db_path()}", highlight=False)
    finish(run, len(tests), len(specs))


def run_tan_celis(con, encoder, budget, seed, alpha, fmt, started):
    import time

    def log(line: str) -> None:
        err.print(line, highlight=False)

    run_id = tancelis.run_job(con, tuple(encoder or tancelis.JOB_ENCODERS), runner.Options(budget=budget, seed=seed), log)
    family = analysis.define_family(con, None, alpha, run_id)
    df = analysis.corrected(con, "holm")
    order = list(dict.fromkeys(df["encoder"].to_list()))
    emit(tancelis.layout(df, catalog.load_toml(), order), fmt)
    err.print(f"run {run_id} in {time.perf_counter() - started:.1f}s; {df['rejected'].sum()} of {family.m} significant after Holm "
              f"at {alpha} (*); c-word vs sent: ✓ c-word only, ✗ sent only, ▲ both.", highlight=False)
