"""Commands over tests and results: test, results, check, query, run."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .. import StimkitError, analysis, catalog, cword, embeddings, encoders, generate, runner, store, tancelis, wordlists
from .common import app, count as _count, emit, err, handles_errors, open_store, out, print_rows, state
from .encode import encode_with_progress
from ..paths import default_db

DEFAULT_ENCODERS = ["glove-6b-50d", "minilm", "minilm,pooling=cls", "use-m3"]


def run_tests(con, tests: list, encoder_specs: list[str], opts: runner.Options, command: str, verbose: bool = True) -> str:
    opts.validate()
    encs = [encoders.resolve(spec) for spec in encoder_specs]  # fail on a bad spec before any work
    sets = {t.name: catalog.fetch_sets(con, t) for t in tests}  # select each test's stimuli once
    encs = cword.encoders_for(tests, encs, sets)  # c-word: the token variants
    for t in tests:  # refuse unequal targets before encoding anything
        if (opts.balance or t.balance) == "none":
            catalog.balance(sets[t.name]["x"], sets[t.name]["y"], "none", opts.seed, t.name)
    every = embeddings.stimuli_of(f for s in sets.values() for f in s.values())
    for enc in encs:  # encode what is missing once per encoder, not once per test
        r = encode_with_progress(con, enc, every, 256)
        out.print(f"encoded {r['encoder']}: {r['cached']} cached, {r['encoded']} new in {r['seconds']:.1f}s", highlight=False)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    total = len(tests) * len(encs)
    done = 0
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=err, transient=True, disable=verbose or not err.is_terminal)
    with bar, store.transaction(con):  # a run is all or nothing: a failing test leaves no partial run
        task = bar.add_task("tests", total=total)
        run_id = runner.start_run(con, command, opts.seed)
        for enc in encs:
            for test in tests:
                bar.update(task, description=f"{test.name} / {enc.spec}")
                row = runner.run_one(con, run_id, test, enc, opts, sets[test.name], encode=False)
                done += 1
                bar.advance(task)
                notes = []
                if row["n_dropped_oov"]:
                    notes.append(f"{row['n_dropped_oov']} stimuli without a vector dropped")
                if row["n_balanced_away"]:
                    notes.append(f"{row['n_balanced_away']} cut by balance={row['balance']}")
                if verbose:
                    err.print(f"[{done}/{total}] {test.name:<45} {enc.spec:<22} d={row['effect_size']:+.3f} "
                              f"p={row['p_value']:.3g} ({row['p_method']}) n={row['n_x']}/{row['n_y']}/{row['n_a']}/{row['n_b']}"
                              + (f"  [{'; '.join(notes)}]" if notes else ""), highlight=False)
    return run_id


@app.command("test")
@handles_errors
def test_cmd(
    names: Annotated[Optional[list[str]], typer.Argument(help="Catalog tests to run.")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every catalog test.")] = False,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoder spec (repeatable).")] = None,
    x: Annotated[Optional[str], typer.Option("--x", help="Ad-hoc test: SQL or set name for X.")] = None,
    y: Annotated[Optional[str], typer.Option("--y")] = None,
    a: Annotated[Optional[str], typer.Option("--a")] = None,
    b: Annotated[Optional[str], typer.Option("--b")] = None,
    name: Annotated[str, typer.Option("--name", help="Name of the ad-hoc test.")] = "adhoc",
    context: Annotated[Optional[str], typer.Option("--context", help="word | sentence | c-word (a sentence test's inserted word; default: the test's own).")] = None,
    budget: Annotated[int, typer.Option("--budget", help="Permutation sample budget.")] = runner.stats.DEFAULT_BUDGET,
    method: Annotated[str, typer.Option("--method", help="auto | exact | sampled | parametric.")] = "auto",
    alternative: Annotated[str, typer.Option("--alternative", help="greater | less | two-sided.")] = "greater",
    seed: Annotated[int, typer.Option("--seed")] = 0,
    clustered: Annotated[bool, typer.Option("--clustered", help="Permute whole words with all their sentences.")] = False,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap replicates for a CI of d (0: none).")] = 0,
    balance: Annotated[Optional[str], typer.Option("--balance", help="cut | drop-words | none (default: the test's).")] = None,
):
    """Run association tests (catalog or ad-hoc) for one or more encoders; results go to the store."""
    con = open_store()
    adhoc = [x, y, a, b]
    if any(adhoc):
        if not all(adhoc):
            raise StimkitError("an ad-hoc test needs all four of --x --y --a --b")
        tests = [catalog.TestDef(name, tuple(adhoc), context or "sentence", None, balance or "none", source="adhoc")]
    else:
        known = catalog.load(con)
        if everything:
            tests = [t for t in known.values() if t.source == "catalog"]
        elif names:
            tests = [catalog.get(con, n) for n in names]
        else:
            raise StimkitError("name tests, or pass --all, or give an ad-hoc test with --x --y --a --b")
        tests = [cword.in_context(t, context) for t in tests]
    opts = runner.Options(budget=budget, method=method, alternative=alternative, seed=seed,
                          clustered=clustered, bootstrap=bootstrap, balance=balance)
    encoders = encoder or ["glove-6b-50d"]
    run_id = run_tests(con, tests, encoders, opts, " ".join(sys.argv[1:]))
    out.print(f"run {run_id}: {_count(len(tests), 'test')} x {_count(len(encoders), 'encoder')}. See `stimkit results --where \"run_id = '{run_id}'\"`.", highlight=False)


RESULT_COLUMNS = ["test", "encoder", "context", "num_targ1", "num_targ2", "num_attr1", "num_attr2",
                  "effect_size", "p_value", "p_method", "p_adjusted", "rejected"]


@app.command("results")
@handles_errors
def results_cmd(
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `results` choosing the family (default: latest run).")] = None,
    correct: Annotated[str, typer.Option("--correct", help="holm | bh | by | none.")] = "holm",
    alpha: Annotated[float, typer.Option("--alpha")] = 0.01,
    fmt: Annotated[str, typer.Option("--format", help="table | csv | json | sentbias.")] = "table",
    table: Annotated[bool, typer.Option("--table", help="Tests x encoders with d and significance marks (Table 4 of May et al.).")] = False,
    layout: Annotated[Optional[str], typer.Option("--layout", help="tan-celis: Tables 7/8 of Tan & Celis 2019 (tests x word/sent/c-word x encoders).")] = None,
):
    """Show results with a multiple-testing correction over the chosen family."""
    con = open_store()
    analysis.define_family(con, where, alpha)
    df = analysis.corrected(con, correct)
    if layout not in (None, "tan-celis"):
        raise StimkitError(f"unknown layout {layout!r} (known: tan-celis)")
    if layout:
        emit(tancelis.layout(df, catalog.load(con)), fmt)
    elif table:
        columns, rows = analysis.table4(df, alpha, list(catalog.load_toml()))
        print_rows(rows, columns, title=f"d by test and encoder; * p <= {alpha}, ** also after {correct} correction")
    elif fmt == "sentbias":
        sys.stdout.write(analysis.sentbias_rows(df).write_csv(separator="\t", quote_style="never"))
    else:
        emit(analysis.with_seat_names(df), fmt, RESULT_COLUMNS if fmt == "table" else None)


@app.command("check")
@handles_errors
def check_cmd(
    where: Annotated[Optional[str], typer.Option("--where", help="SQL condition on `results` (default: latest run).")] = None,
    alpha: Annotated[float, typer.Option("--alpha")] = 0.01,
    fmt: Annotated[str, typer.Option("--format")] = "table",
):
    """Consistency checks: C7 vs C8, C3/C4/C5, word vs sentence, across encoders (queries/consistency.sql)."""
    con = open_store()
    analysis.define_family(con, where, alpha)
    df = analysis.run_sql(con, analysis.named_query("consistency"))
    if df.height == 0:
        out.print("no consistency violations")
        return
    emit(df, fmt)
    out.print(f"{df.height} violations", highlight=False)


@app.command("query")
@handles_errors
def query_cmd(
    sql: Annotated[str, typer.Argument(help="A named query from queries/ (e.g. holm, consistency) or any SQL.")],
    where: Annotated[Optional[str], typer.Option("--where", help="Family for the analysis queries (default: latest run).")] = None,
    alpha: Annotated[float, typer.Option("--alpha")] = 0.01,
    fmt: Annotated[str, typer.Option("--format")] = "table",
):
    """Run a named query or any SQL against the store."""
    con = open_store()
    text = analysis.named_query(sql)
    if store.one(con, "SELECT count(*) FROM results")[0]:
        analysis.define_family(con, where, alpha)
    emit(analysis.run_sql(con, text or sql), fmt)


@app.command("run")
@handles_errors
def run_cmd(
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoders (default: the embedded four).")] = None,
    budget: Annotated[int, typer.Option("--budget")] = runner.stats.DEFAULT_BUDGET,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    alpha: Annotated[float, typer.Option("--alpha")] = 0.01,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="A line per test as it runs.")] = False,
    paper: Annotated[str, typer.Option("--paper", help="may-2019 (Table 4) | tan-celis-2019 (Tables 7 and 8).")] = catalog.DEFAULT_PAPER,
    fmt: Annotated[str, typer.Option("--format", help="Output format of the Tan & Celis table.")] = "table",
):
    """The main job: generate the catalog, encode, run all 46 tests per encoder, Holm at alpha, Table 4, checks.
    With --paper tan-celis-2019: Tan & Celis's tests in word, sent and c-word, and their Tables 7 and 8."""
    import time
    started = time.perf_counter()
    con = open_store()
    if paper == tancelis.PAPER:
        return run_tan_celis(con, encoder, budget, seed, alpha, fmt, started)
    catalog.by_paper(catalog.load_toml(), paper)  # an unknown paper is refused
    lists = wordlists.load_all()
    report = generate.generate(con, catalog.default_specs(lists), lists)
    out.print(f"stimuli: {sum(r['status'] == 'new' for r in report)} new sets, {len(report)} in all", highlight=False)
    specs = encoder or DEFAULT_ENCODERS
    tests = list(catalog.by_paper(catalog.load_toml(), catalog.DEFAULT_PAPER).values())
    opts = runner.Options(budget=budget, seed=seed)
    run_id = run_tests(con, tests, specs, opts, "run", verbose=verbose)
    where = f"run_id = '{run_id}'"
    analysis.define_family(con, where, alpha)
    df = analysis.corrected(con, "holm")
    columns, rows = analysis.table4(df, alpha, list(catalog.load_toml()), [encoders.resolve(s).spec for s in specs])
    print_rows(rows, columns, title=f"Effect size d; * p <= {alpha}; ** significant after Holm over all {df.height} rows")
    checks = analysis.run_sql(con, analysis.named_query("consistency"))
    out.print(f"\n{checks.height} consistency violations (queries/consistency.sql):", highlight=False)
    if checks.height:
        emit(checks, "table")
    out.print(f"\nrun {run_id} in {time.perf_counter() - started:.1f}s; {df['rejected'].sum()} of {df.height} "
              f"significant after Holm at {alpha}. Store: {state['db'] or default_db()}", highlight=False)


def run_tan_celis(con, encoder, budget, seed, alpha, fmt, started):
    import time

    def log(line: str) -> None:
        err.print(line, highlight=False)

    run_id = tancelis.run_job(con, tuple(encoder or tancelis.JOB_ENCODERS), runner.Options(budget=budget, seed=seed), log)
    analysis.define_family(con, f"run_id = '{run_id}'", alpha)
    df = analysis.corrected(con, "holm")
    order = [encoders.resolve(s).spec for s in (encoder or tancelis.JOB_ENCODERS)]
    emit(tancelis.layout(df, catalog.load_toml(), order), fmt)
    err.print(f"run {run_id} in {time.perf_counter() - started:.1f}s; {df['rejected'].sum()} of {df.height} significant after Holm "
              f"at {alpha} (*); c-word vs sent: ✓ c-word only, ✗ sent only, ▲ both.", highlight=False)

