"""Commands over stimuli: generate, sets, catalog, export, import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import StimkitError, catalog, generate, sentbias, store, templates, wordlists
from ..inputs import check_name
from ..paths import default_db
from .common import app, handles_errors, open_store, out, print_rows, state

catalog_app = typer.Typer(help="The test catalog: list tests, show their set queries.", invoke_without_command=True)
export_app = typer.Typer(help="Export stimulus sets in other tools' formats.")
import_app = typer.Typer(help="Import stimulus sets from other tools' formats.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(export_app, name="export")
app.add_typer(import_app, name="import")


@app.command("generate")
@handles_errors
def generate_cmd(
    wordlist: Annotated[Optional[list[str]], typer.Option("--wordlist", "-w", help="Word list name (repeatable); default: all (with --wordlist-dir: its lists).")] = None,
    template_set: Annotated[Optional[list[str]], typer.Option("--templates", "-t", help="Template set, optionally /file (repeatable).")] = None,
    wordlist_dir: Annotated[Optional[Path], typer.Option("--wordlist-dir", help="Folder of your own word-list TOML files, added to the built-in lists.")] = None,
    template_dir: Annotated[Optional[Path], typer.Option("--template-dir", help="Folder of your own template sets, searched before the built-in ones.")] = None,
    override: Annotated[bool, typer.Option("--override", help="Let your word lists / template sets replace built-in ones of the same name (recorded in the set's provenance).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
):
    """Render word lists through template sets into versioned stimulus sets (a no-op when nothing changed)."""
    lists = wordlists.load_all()
    if wordlist_dir:
        own = wordlists.load_all(wordlist_dir)
        lists = wordlists.merge(lists, own, override)
    if wordlist or template_set or wordlist_dir:
        names = wordlist or list(own if wordlist_dir else lists)
        unknown = [n for n in names if n not in lists]
        if unknown:
            raise StimkitError(f"unknown word list {unknown[0]!r} (see wordlists/*.toml)")
        specs = []
        for t in template_set or ["word", "may2019"]:
            tset, _, file = t.partition("/")
            check_name(tset, "template set", f"-t {t!r}")
            specs += [generate.SetSpec(n, tset, file or None) for n in names]
    else:
        specs = catalog.default_specs(lists)
    tsets = {name: templates.load_set(name, template_dir, override) for name in dict.fromkeys(s.template_set for s in specs)}
    con = open_store()
    report = generate.generate(con, specs, lists, tsets)
    counts = {s: sum(r["status"] == s for r in report) for s in ("new", "restored", "unchanged")}
    if not quiet:
        for r in report:
            if r["status"] != "unchanged":
                out.print(f"{r['status']:>9}  {r['name']:<55} {r['version']}  {r['n_stimuli']:>5} stimuli",
                          highlight=False, markup=False, emoji=False)
    out.print(f"{len(report)} sets: {counts['new']} new, {counts['restored']} restored, {counts['unchanged']} unchanged "
              f"({sum(r['n_stimuli'] for r in report)} stimuli) in {state['db'] or default_db()}",
              highlight=False, markup=False, emoji=False)


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
    force: Annotated[bool, typer.Option("--force", help="Write into a folder that is not empty (files of the same name are replaced).")] = False,
):
    """Write one JSON file per catalog test in the published SEAT format (unbalanced by default)."""
    con = open_store()
    written = sentbias.export(con, outdir, tests or [], balance, seed, force)
    out.print(f"wrote {len(written)} files to {outdir}", highlight=False, markup=False, emoji=False)


@import_app.command("sentbias")
@handles_errors
def import_sentbias(
    directory: Path,
    prefix: Annotated[str, typer.Option("--prefix", help="Prefix of the imported test names.")] = "import:",
    override: Annotated[bool, typer.Option("--override", help="Let an imported test replace the catalog test of the same name (recorded in its sets' provenance).")] = False,
):
    """Load published-format JSON files as stimulus sets and tests named <prefix><file stem>."""
    con = open_store()
    report = sentbias.import_dir(con, directory, prefix, override)
    for r in report:
        out.print(f"{r['test']:<50} sizes X/Y/A/B = {'/'.join(map(str, r['sizes']))}", highlight=False, markup=False, emoji=False)
    out.print(f"imported {len(report)} tests", highlight=False)


