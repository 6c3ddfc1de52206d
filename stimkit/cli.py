"""The stimkit command line: generate stimuli, encode, test, and query the store."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from . import StimkitError, __version__, analysis, audit, catalog, embeddings, encoders, generate, runner, sentbias, store, wordlists
from .paths import default_db

app = typer.Typer(help="stimkit: bias-test stimuli, embeddings and association tests in one DuckDB store.",
                  no_args_is_help=True, add_completion=False)
catalog_app = typer.Typer(help="The test catalog: list tests, show their set queries.", invoke_without_command=True)
export_app = typer.Typer(help="Export stimulus sets in other tools' formats.")
import_app = typer.Typer(help="Import stimulus sets from other tools' formats.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")
audit_app = typer.Typer(help="Template audits: how template choice moves d and p.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")

# Piped output (files, CI, tests) gets wide tables rather than wrapped cells.
out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
err = Console(stderr=True, soft_wrap=True)
state = {"db": None}


def handles_errors(fn):
    """Print a StimkitError as one line on stderr and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except StimkitError as e:
            err.print(f"[bold red]error:[/] {e}", highlight=False, markup=True)
            raise typer.Exit(1)

    return wrapper


def open_store(read_only: bool = False):
    return store.connect(state["db"] or default_db(), read_only=read_only)


@app.callback()
def main_options(
    db: Annotated[Optional[Path], typer.Option("--db", envvar="STIMKIT_DB", help="The DuckDB store (default ./stimkit.duckdb).")] = None,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
):
    if version:
        out.print(f"stimkit {__version__}")
        raise typer.Exit()
    state["db"] = db


def default_specs(lists: dict) -> list[generate.SetSpec]:
    """Every catalog set, then every word list under `word` and `may2019`."""
    specs = [s for t in catalog.load_toml().values() for s in t.set_specs()]
    for name in lists:
        specs += [generate.SetSpec(name, "word"), generate.SetSpec(name, "may2019")]
    return list(dict.fromkeys(specs))


@app.command("generate")
@handles_errors
def generate_cmd(
    wordlist: Annotated[Optional[list[str]], typer.Option("--wordlist", "-w", help="Word list name (repeatable); default: all.")] = None,
    template_set: Annotated[Optional[list[str]], typer.Option("--templates", "-t", help="Template set, optionally /file (repeatable).")] = None,
    wordlist_dir: Annotated[Optional[Path], typer.Option("--wordlist-dir", help="Folder of word-list TOML files.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
):
    """Render word lists through template sets into versioned stimulus sets (a no-op when nothing changed)."""
    lists = wordlists.load_all(wordlist_dir)
    if wordlist or template_set:
        names = wordlist or list(lists)
        unknown = [n for n in names if n not in lists]
        if unknown:
            raise StimkitError(f"unknown word list {unknown[0]!r} (see wordlists/*.toml)")
        specs = []
        for t in template_set or ["word", "may2019"]:
            tset, _, file = t.partition("/")
            specs += [generate.SetSpec(n, tset, file or None) for n in names]
    else:
        specs = default_specs(lists)
    con = open_store()
    report = generate.generate(con, specs, lists)
    counts = {s: sum(r["status"] == s for r in report) for s in ("new", "restored", "unchanged")}
    if not quiet:
        for r in report:
            if r["status"] != "unchanged":
                out.print(f"{r['status']:>9}  {r['name']:<55} {r['version']}  {r['n_stimuli']:>5} stimuli", highlight=False)
    out.print(f"{len(report)} sets: {counts['new']} new, {counts['restored']} restored, {counts['unchanged']} unchanged "
              f"({sum(r['n_stimuli'] for r in report)} stimuli) in {state['db'] or default_db()}", highlight=False)


def print_rows(rows: list[dict], columns: list[str], title: str | None = None):
    table = Table(title=title, show_lines=False, header_style="bold")
    for c in columns:
        table.add_column(c)
    for r in rows:
        table.add_row(*("" if r.get(c) is None else str(r[c]) for c in columns))
    out.print(table)


@app.command("sets")
@handles_errors
def sets_cmd(
    all_versions: Annotated[bool, typer.Option("--all", help="Every version, not only the current ones.")] = False,
    like: Annotated[Optional[str], typer.Argument(help="Only sets whose name contains this.")] = None,
):
    """List stimulus sets with their versions and counts."""
    con = open_store()
    view = "stimulus_sets" if all_versions else "current_sets"
    where = "WHERE name LIKE ?" if like else ""
    df = store.frame(
        con, f"SELECT name, version, n_words, n_stimuli, strftime(created_at, '%Y-%m-%d %H:%M:%S') AS created_at "
        f"FROM {view} {where} ORDER BY name, created_at", [f"%{like}%"] if like else None
    )
    print_rows(df.to_dicts(), df.columns)


@catalog_app.callback()
@handles_errors
def catalog_list(ctx: typer.Context):
    """List the catalog's tests."""
    if ctx.invoked_subcommand:
        return
    con = open_store()
    rows = [{"test": t.name, "context": t.context, "family": t.family, "source": t.source,
             "X": t.sets[0], "Y": t.sets[1], "A": t.sets[2], "B": t.sets[3]} for t in catalog.load(con).values()]
    print_rows(rows, ["test", "context", "family", "X", "Y", "A", "B"])


@catalog_app.command("show")
@handles_errors
def catalog_show(name: str):
    """Print a test's four set queries and the sizes they select."""
    con = open_store()
    test = catalog.get(con, name)
    out.print(f"[bold]{test.name}[/]  context={test.context} family={test.family} balance={test.balance} source={test.source}")
    for role in catalog.ROLES:
        sql = test.sql(role)
        try:
            n = store.one(con, f"SELECT count(*) FROM ({sql})")[0]
        except Exception as e:
            n = f"error: {str(e).splitlines()[0]}"
        out.print(f"\n[bold]{role.upper()}[/] ({n} stimuli)\n  {sql}", highlight=False)


@export_app.command("sentbias")
@handles_errors
def export_sentbias(
    outdir: Path,
    tests: Annotated[Optional[list[str]], typer.Option("--test", help="Test name (repeatable); default: all.")] = None,
    balance: Annotated[Optional[str], typer.Option("--balance", help="Apply a balancing policy: cut | drop-words.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
):
    """Write one JSON file per catalog test in the published SEAT format (unbalanced by default)."""
    con = open_store()
    written = sentbias.export(con, outdir, tests or [], balance, seed)
    out.print(f"wrote {len(written)} files to {outdir}")


@import_app.command("sentbias")
@handles_errors
def import_sentbias(
    directory: Path,
    prefix: Annotated[str, typer.Option("--prefix", help="Prefix of the imported test names.")] = "import:",
):
    """Load published-format JSON files as stimulus sets and tests named <prefix><file stem>."""
    con = open_store()
    report = sentbias.import_dir(con, directory, prefix)
    for r in report:
        out.print(f"{r['test']:<50} sizes X/Y/A/B = {'/'.join(map(str, r['sizes']))}", highlight=False)
    out.print(f"imported {len(report)} tests")


def select_stimuli(con, sets: list[str] | None, tests: list[str] | None, everything: bool):
    """The stimuli named by --set / --test / --all, as one frame."""

    if everything:
        return catalog.fetch(con, "SELECT * FROM current_stimuli", "all stimuli")
    frames = []
    for name in sets or []:
        frames.append(catalog.fetch(con, catalog.set_sql(name), f"set {name!r}"))
    for name in tests or []:
        test = catalog.get(con, name)
        frames += list(catalog.fetch_sets(con, test).values())
    if not frames:
        raise StimkitError("say what to encode: --set NAME, --test NAME or --all")
    return embeddings.stimuli_of(frames)


def encode_with_progress(con, enc, stimuli, batch_size: int) -> dict:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn()]
    with Progress(*columns, console=err, disable=not err.is_terminal, transient=True) as bar:
        task = bar.add_task(f"encode {enc.spec}", total=None, rate="")
        started = [None]

        def tick(done, total):
            import time
            started[0] = started[0] or time.perf_counter()
            elapsed = max(time.perf_counter() - started[0], 1e-9)
            bar.update(task, completed=done, total=total, rate=f"{done / elapsed:,.0f}/s")

        return embeddings.encode_missing(con, enc, stimuli, batch_size, tick)


@app.command("encode")
@handles_errors
def encode_cmd(
    encoder: Annotated[list[str], typer.Option("--encoder", "-e", help="Encoder spec (repeatable), e.g. minilm,pooling=cls.")],
    sets: Annotated[Optional[list[str]], typer.Option("--set", help="Stimulus set name or SQL (repeatable).")] = None,
    tests: Annotated[Optional[list[str]], typer.Option("--test", help="Catalog test (repeatable).")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every current stimulus.")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 256,
):
    """Encode stimuli into the embedding store; only what is missing, committing each batch."""
    con = open_store()
    stimuli = select_stimuli(con, sets, tests, everything)
    for spec in encoder:
        enc = encoders.resolve(spec)
        r = encode_with_progress(con, enc, stimuli, batch_size)
        rate = f", {r['encoded'] / r['seconds']:,.0f}/s" if r["encoded"] and r["seconds"] > 0 else ""
        out.print(f"{r['encoder']:<40} {r['fingerprint']}  {r['wanted']} texts: {r['cached']} cached, "
                  f"{r['encoded']} encoded in {r['seconds']:.1f}s{rate}", highlight=False)
        notes = store.rows(con, f"SELECT note, count(*) FROM {embeddings.vector_table(enc.dim)} "
                                "WHERE fingerprint = ? AND note IS NOT NULL GROUP BY note ORDER BY 2 DESC LIMIT 5", [r["fingerprint"]])
        for note, n in notes:
            out.print(f"  note: {note} ({n} texts)", highlight=False)


@app.command("encoders")
@handles_errors
def encoders_cmd():
    """List the embedded encoders and every encoder with vectors in the store."""
    con = open_store()
    stored = store.rows(con, "SELECT fingerprint, spec, dim, vector_table FROM encoders ORDER BY created_at")
    rows = []
    for fp, spec, dim, table in stored:
        n, nulls = store.one(con, f"SELECT count(*), count(*) - count(vector) FROM {table} WHERE fingerprint = ?", [fp])
        rows.append({"encoder": spec, "fingerprint": fp, "dim": dim, "vectors": n, "no vector (OOV)": nulls})
    listed = {r["encoder"].split(",")[0] for r in rows}
    dims = {"glove-6b-50d": 50, "minilm": 384, "use-m3": 512}
    for name in encoders.EMBEDDED:
        if name not in listed:
            rows.append({"encoder": name, "fingerprint": "", "dim": dims[name], "vectors": 0, "no vector (OOV)": 0})
    print_rows(rows, ["encoder", "fingerprint", "dim", "vectors", "no vector (OOV)"])
    out.print("also: hf:<model id or path>, vectors:<word2vec/GloVe file>, import:<parquet/csv>; options as ,key=value")


DEFAULT_ENCODERS = ["glove-6b-50d", "minilm", "minilm,pooling=cls", "use-m3"]
FORMATS = ("table", "csv", "json")


def emit(df, fmt: str, columns: list[str] | None = None):
    """Print a frame as a table, CSV or JSON (machine formats go to stdout untouched)."""
    if columns:
        df = df.select([c for c in columns if c in df.columns])
    if fmt == "csv":  # CSV has no lists: join them
        import polars as pl
        lists = [c for c, t in df.schema.items() if isinstance(t, pl.List)]
        df = df.with_columns(pl.col(c).cast(pl.List(pl.String)).list.join(";") for c in lists)
        sys.stdout.write(df.write_csv())
    elif fmt == "json":
        sys.stdout.write(df.write_json() + "\n")
    elif fmt == "table":
        rows = [{k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()} for r in df.iter_rows(named=True)]
        print_rows(rows, df.columns)
    else:
        raise StimkitError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def run_tests(con, tests: list, encoder_specs: list[str], opts: runner.Options, command: str, verbose: bool = True) -> str:
    opts.validate()
    encs = [encoders.resolve(spec) for spec in encoder_specs]  # fail on a bad spec before any work
    sets = {t.name: catalog.fetch_sets(con, t) for t in tests}  # select each test's stimuli once
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
    context: Annotated[str, typer.Option("--context", help="Ad-hoc test context: word | sentence.")] = "sentence",
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
        tests = [catalog.TestDef(name, tuple(adhoc), context, None, balance or "none", source="adhoc")]
    else:
        known = catalog.load(con)
        if everything:
            tests = [t for t in known.values() if t.source == "catalog"]
        elif names:
            tests = [catalog.get(con, n) for n in names]
        else:
            raise StimkitError("name tests, or pass --all, or give an ad-hoc test with --x --y --a --b")
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
):
    """Show results with a multiple-testing correction over the chosen family."""
    con = open_store()
    analysis.define_family(con, where, alpha)
    df = analysis.corrected(con, correct)
    if table:
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
):
    """The main job: generate the catalog, encode, run all 46 tests per encoder, Holm at alpha, Table 4, checks."""
    import time
    started = time.perf_counter()
    con = open_store()
    lists = wordlists.load_all()
    report = generate.generate(con, default_specs(lists), lists)
    out.print(f"stimuli: {sum(r['status'] == 'new' for r in report)} new sets, {len(report)} in all", highlight=False)
    specs = encoder or DEFAULT_ENCODERS
    tests = list(catalog.load_toml().values())
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


def caliskan_sentence_tests() -> list[str]:
    return [n for n, t in catalog.load_toml().items() if n.startswith("sent-weat")]


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


def main():
    app()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
