"""The stimkit command line: generate stimuli, encode, test, and query the store."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from . import StimkitError, __version__, catalog, embeddings, encoders, generate, sentbias, store, wordlists
from .paths import default_db

app = typer.Typer(help="stimkit: bias-test stimuli, embeddings and association tests in one DuckDB store.",
                  no_args_is_help=True, add_completion=False)
catalog_app = typer.Typer(help="The test catalog: list tests, show their set queries.", invoke_without_command=True)
export_app = typer.Typer(help="Export stimulus sets in other tools' formats.")
import_app = typer.Typer(help="Import stimulus sets from other tools' formats.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")

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
    import polars as pl

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
    return pl.concat([f.select("stimulus", "span_start", "span_end") for f in frames], how="vertical_relaxed")


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


def main():
    app()
