"""Start-up: a command registers only its own module, and reads import nothing heavy.
(The timings themselves are bench/bench_cli.py's; these are the reasons they hold.)"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import stimkit
import stimkit.cli as cli
import stimkit.views.emit
from stimkit import choices

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("scipy", "torch", "transformers", "gensim", "matplotlib", "sklearn", "jinja2")


def test_every_command_is_registered_by_the_module_main_loads_for_it():
    """COMMAND_MODULES must name, for every command of the whole app, the module that defines it:
    otherwise `stimkit <that command>` would be "No such command"."""
    app = cli.register()
    defined = {c.name: c.callback.__module__ for c in app.registered_commands}
    for group in app.registered_groups:
        sub = group.typer_instance
        callbacks = [c.callback for c in sub.registered_commands]
        assert len({f.__module__ for f in callbacks}) == 1, group.name
        defined[group.name] = callbacks[0].__module__
    assert defined and set(defined) == set(cli.COMMAND_MODULES)
    for name, module in defined.items():
        assert module == f"stimkit.cli.{cli.COMMAND_MODULES[name]}", name
    assert set(cli.COMMAND_MODULES.values()) == set(cli.MODULES)


@pytest.mark.parametrize("args, command", [
    (["results"], "results"), (["--db", "x.duckdb", "results", "--format", "csv"], "results"),
    (["--db=x.duckdb", "--debug", "audit", "show"], "audit"), (["--help"], None), ([], None),
    (["--db"], None), (["--version"], None),
])
def test_the_command_word_skips_global_options(args, command):
    assert cli.command_of(args) == command


def probe(db: Path, *args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run the CLI in a fresh interpreter; return the process and the modules it had imported."""
    code = ("import sys\nfrom stimkit.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    code = e.code\nprint('\\n'.join(sorted(sys.modules)), file=open(sys.argv[0] + '.modules', 'w'))\n")
    script = db.parent / "probe.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script), "--db", str(db), *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    return proc, set(Path(str(script) + ".modules").read_text().split())


def test_a_read_command_builds_only_its_own_commands_and_imports_nothing_heavy(catalog_db, tmp_path):
    db = tmp_path / "s.duckdb"
    import shutil
    shutil.copy(catalog_db, db)
    with stimkit.open(db) as s:
        s.test(["weat1"], encoders=["glove-6b-50d"], budget=1000)
    proc, modules = probe(db, "results", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("result_id,") and len(proc.stdout.splitlines()) == 2
    assert "stimkit.cli.association" in modules
    assert not {"stimkit.cli.audit", "stimkit.cli.wefat", "stimkit.cli.report", "stimkit.cli.encode"} & modules
    assert not {m for m in modules if m.split(".")[0] in HEAVY}
    # a read that prints a table or csv pays for the store, not for a frame (it prints plain.Rows),
    # pyarrow, pandas or the statistics
    tops = {m.split(".")[0] for m in modules}
    assert "duckdb" in tops and not {"polars", "numpy", "pyarrow", "pandas", "statsmodels"} & tops
    assert not {m for m in modules if m.startswith(("stimkit.run", "stimkit.encoders"))}
    # of the statistics only the significance rule (stats.decision); the package's face loads lazily
    assert {m for m in modules if m.startswith("stimkit.stats.")} <= {"stimkit.stats.decision"}
    # json takes a frame (DuckDB hands it to polars through the Arrow C stream, not pyarrow)
    proc, modules = probe(db, "results", "--format", "json")
    assert proc.returncode == 0 and proc.stdout.startswith('{"family": ')
    assert "polars" in {m.split(".")[0] for m in modules} and "pyarrow" not in {m.split(".")[0] for m in modules}


def test_frames_from_the_arrow_stream_equal_duckdbs_own_conversion():
    """store.frame reads through the Arrow C stream (no pyarrow): the same frame as DuckDB's
    .pl(), type for type, empty or not, and a name given twice made unique as .pl() makes it."""
    import duckdb

    from stimkit import store

    con = duckdb.connect()
    sql = ("SELECT 1::INTEGER AS a, 2.5::DECIMAL(10,2) AS dec, TIMESTAMP '2026-01-02 03:04:05' AS ts, MAP {'k': 1} AS m, "
           "{'x': 1} AS st, [1, 2] AS l, 1::HUGEINT AS h, 'a'::ENUM('a', 'b') AS e, true AS b, DATE '2020-01-01' AS dt, "
           "[0.5, NULL]::FLOAT[2] AS v, NULL::DOUBLE AS n, 'x'::BLOB AS bl, 'é' AS s FROM range(3) WHERE range < ?")
    for keep in (3, 0):
        got, want = store.frame(con, sql, [keep]), con.sql(sql, params=[keep]).pl()
        assert got.schema == want.schema and got.equals(want) and got.height == keep
    twice = store.frame(con, "SELECT 1 AS test, 2 AS test")
    assert twice.columns == con.sql("SELECT 1 AS test, 2 AS test").pl().columns and twice.width == 2


def test_a_word_test_imports_neither_scipy_stats_nor_pandas(catalog_db, tmp_path):
    """WEAT on a word test (sampled p, interval, influence, diagnostics, the writes) pays for
    numpy and scipy.special, not for scipy.stats or pandas (half a second each): issue 41."""
    db = tmp_path / "s.duckdb"
    import shutil
    shutil.copy(catalog_db, db)
    proc, modules = probe(db, "test", "weat1", "-e", "glove-6b-50d", "-q")
    assert proc.returncode == 0, proc.stderr
    with stimkit.open(db, read_only=True) as s:
        assert s.query("SELECT p_method FROM results").item() == "sampled"   # the split sampler's law was built
    assert not {m for m in modules if m.split(".")[0] == "pandas" or m.startswith("scipy.stats")}


def test_help_lists_every_command(tmp_path):
    proc, modules = probe(tmp_path / "none.duckdb", "--help")
    assert proc.returncode == 0
    for name in cli.COMMAND_MODULES:
        assert f" {name} " in proc.stdout, name
    assert not (tmp_path / "none.duckdb").exists()
    # --help imports the CLI's own light modules and Typer, nothing of the store or the data
    assert not {m.split(".")[0] for m in modules} & {"duckdb", "polars", "pyarrow", "numpy", *HEAVY}
    assert {m for m in modules if m.startswith("stimkit.") and not m.startswith("stimkit.cli")} <= {
        f"stimkit.{m}" for m in ("choices", "errors", "views", "views.emit", "views.text", "paths", "plain")}


def run_main(capsys, *args):
    with pytest.raises(SystemExit) as exit_:
        cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return exit_.value.code, out.out, out.err


EXAMPLE = REPO / "examples" / "care-tech"


def test_global_options_go_before_or_after_the_command(tmp_path, capsys):
    """`stimkit test T --db X` and `stimkit test T --catalog-dir D` work as with the options first."""
    db = tmp_path / "s.duckdb"
    code, _, err = run_main(capsys, "test", "care-tech-gender", "-e", "glove-6b-50d", "--budget", "1000", "-q",
                            "--wordlist-dir", EXAMPLE / "wordlists", "--db", db, "--catalog-dir", EXAMPLE / "tests")
    assert code == 0 and db.exists(), err
    before = run_main(capsys, "--db", db, "results", "--format", "csv")
    after = run_main(capsys, "results", "--format", "csv", "--db", db)
    assert before == after and before[0] == 0 and "care-tech-gender," in before[1]
    # a group's subcommand, and a read of the catalog with your folder (both before and after)
    code, out, _ = run_main(capsys, "catalog", "show", "care-tech-gender", "--catalog-dir", EXAMPLE / "tests", "--db", db)
    assert code == 0 and out.startswith("care-tech-gender  context=word")
    assert run_main(capsys, "--catalog-dir", EXAMPLE / "tests", "catalog", "--format", "csv")[1] == \
        run_main(capsys, "catalog", "--format", "csv", "--catalog-dir", EXAMPLE / "tests")[1]
    # --debug after the command word too
    code, _, err = run_main(capsys, "results", "--db", tmp_path / "absent.duckdb", "--debug")
    assert code == 2 and "no store at" in err


def test_a_commands_own_option_before_the_command_word_shows_where_it_goes(tmp_path, capsys):
    code, out, err = run_main(capsys, "--db", tmp_path / "s.duckdb", "--wordlist-dir", EXAMPLE / "wordlists",
                              "--override", "generate", "-t", "word")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert ("--wordlist-dir, --override are options of `stimkit generate`, so they go after the command: "
            f"stimkit --db {tmp_path / 's.duckdb'} generate -t word --wordlist-dir {EXAMPLE / 'wordlists'} --override") in err
    assert not (tmp_path / "s.duckdb").exists()
    # an option no command has: Click's own message, pointing at the help
    code, _, err = run_main(capsys, "--bogus", "test")
    assert code == 2 and "No such option: --bogus (see `stimkit --help`)" in err


def test_every_command_lists_the_global_options_in_its_help(capsys):
    code, out, _ = run_main(capsys, "audit", "show", "--help")
    assert code == 0 and "Global options (before or after the command)" in out
    assert all(option in out for option in ("--db", "--catalog-dir", "--debug"))


# Every option that takes one of a list of values: the command that reaches its check, and the
# list in code that both the check and the help text read (stimkit/choices.py, the catalog's papers,
# the built-in studies).
def _papers():
    from stimkit.catalog import definitions as catalog
    return tuple(catalog.papers())


def _studies():
    from stimkit.study import study
    return tuple(study.builtin())


ENUMERATED = {
    ("test", "--method"): (["test", "weat1"], lambda: choices.P_METHODS),
    ("test", "--alternative"): (["test", "weat1"], lambda: choices.ALTERNATIVES),
    ("test", "--balance"): (["test", "weat1"], lambda: choices.BALANCE_POLICIES),
    ("test", "--context"): (["test", "weat1"], lambda: choices.CONTEXTS),
    ("test", "--source"): (["test", "weat1"], lambda: choices.SOURCES),
    ("test", "--metric"): (["test", "weat1"], lambda: choices.METRIC_NAMES),
    ("test", "--center"): (["test", "weat1"], lambda: choices.CENTERINGS),
    ("test", "--units"): (["test", "weat1"], lambda: choices.UNITS),
    ("import sentbias", "--units"): (["import", "sentbias", "{tmp}"], lambda: choices.UNITS),
    ("baseline", "--method"): (["baseline", "weat1"], lambda: choices.P_METHODS),
    ("baseline", "--alternative"): (["baseline", "weat1"], lambda: choices.ALTERNATIVES),
    ("baseline", "--balance"): (["baseline", "weat1"], lambda: choices.BALANCE_POLICIES),
    ("baseline", "--units"): (["baseline", "weat1"], lambda: choices.UNITS),
    # the procedure's options, declared once (cli/procedure.py): audit takes them as test does
    **{(f"audit {sub}", option): (["audit", sub, "-t", "sent-weat6", "-s", "may2019", "-s", "past_tense"], values)
       for sub in ("templates", "compare")
       for option, values in (("--method", lambda: choices.P_METHODS), ("--alternative", lambda: choices.ALTERNATIVES),
                              ("--balance", lambda: choices.BALANCE_POLICIES), ("--units", lambda: choices.UNITS))},
    ("results", "--correct"): (["results"], lambda: choices.CORRECTIONS),
    ("results", "--kind"): (["results"], lambda: choices.RESULT_KINDS),
    ("results", "--layout"): (["results"], lambda: choices.LAYOUTS),
    ("report", "--correct"): (["report"], lambda: choices.CORRECTIONS),
    ("report", "--format"): (["report"], lambda: choices.REPORT_FORMATS),
    ("wefat", "--method"): (["wefat", "wefat-names"], lambda: choices.WORD_P_METHODS),
    ("wefat", "--context"): (["wefat", "wefat-names"], lambda: choices.WEFAT_CONTEXTS),
    ("export sentbias", "--balance"): (["export", "sentbias", "{tmp}/out"], lambda: choices.BALANCE_POLICIES),
    ("encode", "--engine"): (["encode", "-e", "glove-6b-50d", "--all"], lambda: choices.ENGINES),
    ("catalog", "--paper"): (["catalog"], _papers),
    ("run", "--paper"): (["run"], _studies),
    ("sets", "--format"): (["sets"], lambda: stimkit.views.emit.FORMATS),
}


def commands_and_options():
    """(command path, option, help text) of every option of every command of the CLI."""
    import typer

    def walk(command, path):
        for param in command.params:
            if getattr(param, "help", None) and param.opts and param.opts[0].startswith("--"):
                yield " ".join(path), param.opts[0], param.help
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(cli.register()), [])


def test_every_option_that_lists_its_values_is_held_to_the_list_in_code():
    """An option whose help lists values (a | b | c) is one the next test checks: a new one is
    added there. Every command's --format (cli.common.format_option) lists the output layer's formats."""
    listed = set()
    for command, option, text in commands_and_options():
        if option == "--format" and command != "report":
            assert choices.choices(stimkit.views.emit.FORMATS) in text, (command, text)
        elif " | " in text:
            listed.add((command, option))
    assert listed <= set(ENUMERATED), listed - set(ENUMERATED)


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("enum") / "s.duckdb"
    with stimkit.open(path) as s:
        s.generate(["flowers"], ["word"])
    return path


@pytest.mark.parametrize("command, option", list(ENUMERATED))
def test_help_lists_every_value_an_option_accepts(command, option, small_store, tmp_path, capsys):
    """The help names exactly the values of the list the check reads, in its order; a value not
    in it is refused in one line that names them all (exit 2), before any work."""
    args, values = ENUMERATED[(command, option)]
    values = values()
    text = {(c, o): t for c, o, t in commands_and_options()}[(command, option)]
    assert (", ".join(values) if option == "--metric" else choices.choices(values)) in text, (text, values)
    code, out, err = run_main(capsys, "--db", small_store, *[a.replace("{tmp}", str(tmp_path)) for a in args],
                              option, "bogus-value")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert all(v.split(":")[0] in err for v in values) and "bogus-value" in err, err
