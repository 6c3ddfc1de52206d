"""Start-up: a command registers only its own module, and reads import nothing heavy.
(The timings themselves are bench/bench_cli.py's; these are the reasons they hold.)"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import stimkit
import stimkit.cli as cli

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
    assert "stimkit.cli.tests" in modules
    assert not {"stimkit.cli.audit", "stimkit.cli.wefat", "stimkit.cli.report", "stimkit.cli.encode"} & modules
    assert not {m for m in modules if m.split(".")[0] in HEAVY}


def test_help_lists_every_command(tmp_path):
    proc, _ = probe(tmp_path / "none.duckdb", "--help")
    assert proc.returncode == 0
    for name in cli.COMMAND_MODULES:
        assert f" {name} " in proc.stdout, name
    assert not (tmp_path / "none.duckdb").exists()
