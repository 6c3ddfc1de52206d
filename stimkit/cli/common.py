"""What every command shares: the Typer app, the consoles, the store path, the error handler, printing."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import __version__
from ..choices import check_alpha, check_correction  # noqa: F401  (commands check these before any work)
from ..errors import Interrupted, StimkitError, UsageError, first_line
from ..views.emit import FORMATS, check_format, emit, emit_document, emit_tables, err, out, print_rows  # noqa: F401  (one output layer)
from ..views.text import count, family_line  # noqa: F401  (said as every view says it)
from ..paths import default_db

def _flags_take_no_value():
    """Typer 0.29 prints a flag's type (`--debug <bool>`) as if it took a value; a flag shows none."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    TyperOption.display_type_rich = lambda self, ctx: None if self.is_flag else shown(self, ctx)


_flags_take_no_value()

app = typer.Typer(help="stimkit: bias-test stimuli, embeddings and association tests in one DuckDB store.",
                  no_args_is_help=True, add_completion=False)

# `out` and `err` (from views/emit.py) print text as it is: prose that wants markup passes markup=True.
state = {"db": None}


def fail(message: str, code: int = 1):
    """One line on stderr, never read as markup, then exit with `code`."""
    from rich.text import Text

    err.print(Text.assemble(("error: ", "bold red"), str(message).replace("\n", " ")), highlight=False)
    raise typer.Exit(code)


def handles_errors(fn):
    """Every expected error becomes one line on stderr, its exit code by its type (usage 2,
    input 1, store 3, interrupted 130). Ctrl-C is known by the signal, not by a message: a
    KeyboardInterrupt that a library turned into its own error still exits 130. Anything
    else is a bug: one line too, the traceback only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import duckdb

        from ..store import holds_nothing

        succeeded = stopped = False
        interrupted = _watch_interrupts()
        try:
            result = fn(*args, **kwargs)
            succeeded = True
            return result
        except typer.Exit as e:
            succeeded = not e.exit_code
            raise
        except (KeyboardInterrupt, duckdb.InterruptException, Interrupted):
            stopped = True
            fail(INTERRUPTED, Interrupted.exit_code)
        except StimkitError as e:
            fail(str(e), e.exit_code)
        except Exception as e:
            if interrupted():  # Ctrl-C inside DuckDB or polars, surfacing as their own error
                stopped = True
                fail(INTERRUPTED, Interrupted.exit_code)
            if isinstance(e, duckdb.Error):  # an IO error of the store file itself (truncated, unreadable): exit 3
                fail(f"store {db_path()}: {str(e).splitlines()[0]}", 3 if isinstance(e, duckdb.IOException) else 1)
            if isinstance(e, OSError):
                fail(f"{e.filename + ': ' if e.filename else ''}{e.strerror or e}", 1)
            if state.get("debug"):
                raise
            fail(f"internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
                 "(run with --debug for the traceback)", 1)
        finally:  # every store the command opened: a traceback kept alive must not keep the file open
            while _opened:
                opened, staging = _opened.pop()
                opened.close()
                if staging is not None and not any(s is staging for _, s in _opened):
                    # a new store moves to its path when the command ends. An interrupted command,
                    # or one that failed having written nothing, leaves no file; one that reported
                    # failed parts (exit 1) keeps what it committed, as on an existing store.
                    try:
                        staging.finish(keep=succeeded or (not stopped and not holds_nothing(staging.staged)))
                    except StimkitError as e:
                        fail(str(e), e.exit_code)

    return wrapper


INTERRUPTED = "interrupted; nothing half-written was kept"


_sigints = [0]  # how many SIGINTs this process has received since stimkit's handler was installed


def _watch_interrupts():
    """Count every SIGINT (then raise KeyboardInterrupt as Python does); returns a function
    that says whether one arrived since this call."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        def on_sigint(signum, frame):
            _sigints[0] += 1
            signal.default_int_handler(signum, frame)

        signal.signal(signal.SIGINT, on_sigint)
    start = _sigints[0]
    return lambda: _sigints[0] > start


def open_store(read_only: bool = False, allow_files: bool = False, **inputs):
    """The store as a library object (`with open_store() as store: ... store.con`). Read
    commands open it read-only: they never create a file, and wait while another process
    writes. `inputs`: wordlist_dir, template_dir, override (your own lists and templates);
    the test definitions folder is the global --catalog-dir."""
    from ..api import Store
    from ..store.staging import Staging

    path = db_path()
    found = current_study()
    if found is not None:  # the study's folders, where the command's own flags do not name others
        for key, value in (("wordlist_dir", found.wordlist_dir), ("template_dir", found.template_dir)):
            if inputs.get(key) is None and value is not None:
                inputs[key] = value
    staging = next((s for _, s in _opened if s is not None and s.path in (path, path.resolve())), None)
    if staging is None and not read_only and not path.exists():
        staging = Staging.start(path, lambda message: err.print(message, highlight=False))  # built beside
        # the path, moved there when the command ends; None: another command made it meanwhile
    try:
        opened = Store(staging.staged if staging else path, read_only, allow_files=allow_files,
                       on_wait=lambda message: err.print(message, highlight=False),
                       catalog_dir=catalog_dir(), **inputs)
    except BaseException as e:
        if staging is not None and not any(s is staging for _, s in _opened):
            staging.finish(keep=False)
            if isinstance(e, StimkitError):  # name the path the user gave, not the hidden one
                raise type(e)(str(e).replace(str(staging.staged), str(path))) from None
        raise
    _opened.append((opened, staging))
    return opened


# Stores opened by the running command, each with its Staging where the command creates the
# store: all are closed when it ends, and a new one moves to its path then, unless the
# command failed having written nothing (a typo'd test name on a fresh path must not leave a
# store for reads to find) or was killed (store.staging's guard removes it).
_opened: list = []


def _not_an_option(ctx, param, value):
    """`--db --catalog-dir x`: a value that is another option is a forgotten value (exit 2)."""
    if isinstance(value, (str, Path)) and str(value).startswith("--"):
        raise typer.BadParameter(f"{param.opts[0]} needs a value, not the option {str(value)!r}", ctx, param)
    return value


def _print_version(value: bool):
    """The version, the store schema it writes and, where a store is found, that store's schema."""
    if value:
        from ..store import connection

        line = f"stimkit {__version__} (store schema {connection.migrations()[-1][0]})"
        try:
            path = db_path()
            if path.exists():
                import duckdb

                with duckdb.connect(str(path), read_only=True) as con:
                    found = con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]
                line += f"; {path}: schema {found}"
        except (StimkitError, OSError, ImportError) as e:  # a version is printed whatever the store is
            line += f"; store not read ({first_line(e)})"
        except Exception as e:  # noqa: BLE001  (duckdb's errors: a locked or foreign file)
            line += f"; store not read ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
        out.print(line, highlight=False, markup=False)
        raise typer.Exit()


# The global options: what they set in `state`, their names and help. They go before the
# command word (`stimkit --db X test`) or after it (`stimkit test --db X`): every command and
# group takes them too (GLOBAL_AFTER), so a person types them where they like.
GLOBAL_OPTIONS = {
    "db": ("--db", "STIMKIT_DB", "The DuckDB store (default ./stimkit.duckdb)."),
    "catalog_dir": ("--catalog-dir", "STIMKIT_CATALOG_DIR", "Folder of your own test definitions (TOML, the catalog's format)."),
    "study": ("--study", "STIMKIT_STUDY", "The study file (or a built-in study) that gives commands their folders, "
                                          "tests, encoders, alpha and baseline (default: study.toml here or in "
                                          "the nearest folder above)."),
    "debug": ("--debug", None, "Show the traceback of an unexpected error (a flag: no value)."),
}
GLOBAL_PANEL = "Global options (before or after the command)"


@app.callback()
def main_options(
    db: Annotated[Optional[Path], typer.Option(GLOBAL_OPTIONS["db"][0], envvar=GLOBAL_OPTIONS["db"][1],
                                               help=GLOBAL_OPTIONS["db"][2], callback=_not_an_option)] = None,
    catalog_dir: Annotated[Optional[Path], typer.Option(GLOBAL_OPTIONS["catalog_dir"][0], envvar=GLOBAL_OPTIONS["catalog_dir"][1],
                                                        help=GLOBAL_OPTIONS["catalog_dir"][2], callback=_not_an_option)] = None,
    study: Annotated[Optional[str], typer.Option(GLOBAL_OPTIONS["study"][0], envvar=GLOBAL_OPTIONS["study"][1],
                                                 help=GLOBAL_OPTIONS["study"][2], callback=_not_an_option)] = None,
    debug: Annotated[bool, typer.Option(GLOBAL_OPTIONS["debug"][0], help=GLOBAL_OPTIONS["debug"][2])] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
):
    state["db"] = db
    state["debug"] = debug
    state["catalog_dir"] = catalog_dir
    state["study"] = study
    state.pop("study_in_force", None)  # found again for this command (CliRunner runs many in one process)


def _global_after(
    db: Annotated[Optional[Path], typer.Option(GLOBAL_OPTIONS["db"][0], help=GLOBAL_OPTIONS["db"][2],
                                               rich_help_panel=GLOBAL_PANEL)] = None,
    catalog_dir: Annotated[Optional[Path], typer.Option(GLOBAL_OPTIONS["catalog_dir"][0], help=GLOBAL_OPTIONS["catalog_dir"][2],
                                                        rich_help_panel=GLOBAL_PANEL)] = None,
    study: Annotated[Optional[str], typer.Option(GLOBAL_OPTIONS["study"][0], help=GLOBAL_OPTIONS["study"][2],
                                                 rich_help_panel=GLOBAL_PANEL)] = None,
    debug: Annotated[bool, typer.Option(GLOBAL_OPTIONS["debug"][0], help=GLOBAL_OPTIONS["debug"][2],
                                        rich_help_panel=GLOBAL_PANEL)] = False,
):
    """The global options as a command's own: their declarations, read by `global_params_after`."""


@functools.cache
def global_params_after() -> tuple:
    """Click parameters for --db, --catalog-dir and --debug after the command word: each sets
    `state` when given there (the app's callback has run by then, with what came before)."""
    probe = typer.Typer(add_completion=False)
    probe.command()(_global_after)
    params = typer.main.get_command(probe).params

    def setter(ctx, param, value):
        _not_an_option(ctx, param, value)
        if value is not None and value is not False:
            state[param.name] = value
            if param.name == "study":
                state.pop("study_in_force", None)
        return value

    for param in params:
        param.expose_value, param.callback = False, setter
    return tuple(params)


class GlobalAfterCommand(typer.core.TyperCommand):
    """A command that also takes the global options after its name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params.extend(global_params_after())

    def parse_args(self, ctx, args):
        ctx.meta[_ARGS] = list(args)  # the command's own words, as typed: `invocation` records them
        return super().parse_args(ctx, args)


class GlobalAfterGroup(typer.core.TyperGroup):
    """A command group (`results`, `audit`, ...) that also takes the global options after its name."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params.extend(global_params_after())

    def parse_args(self, ctx, args):
        ctx.meta[_ARGS] = list(args)
        return super().parse_args(ctx, args)


_ARGS = "stimkit.args"
_GLOBAL_VALUED = ("--db", "--catalog-dir", "--study")


def invocation() -> str:
    """The command as parsed, for the store's record: the command's path (`audit templates`)
    and its own arguments, the global options left out wherever they were typed
    (`stimkit --db s.duckdb baseline weat6` records `baseline weat6`)."""
    import shlex

    from typer._click.globals import get_current_context

    ctx = get_current_context()
    path = []
    node = ctx
    while node.parent is not None:
        path.append(node.info_name)
        node = node.parent
    words, args, skip = list(reversed(path)), [], False
    for arg in ctx.meta.get(_ARGS, []):
        if skip:
            skip = False
        elif arg in _GLOBAL_VALUED:
            skip = True
        elif arg == "--debug" or arg.split("=", 1)[0] in _GLOBAL_VALUED:
            continue
        else:
            args.append(arg)
    return shlex.join(words + args)


WordlistDirOption = Annotated[Optional[Path], typer.Option(
    "--wordlist-dir", help="Folder of your own word-list TOML files (for sets this command generates).")]
TemplateDirOption = Annotated[Optional[Path], typer.Option(
    "--template-dir", help="Folder of your own template sets, searched before the built-in ones.")]
OverrideOption = Annotated[bool, typer.Option(
    "--override", help="Let your tests, word lists or template sets replace built-in ones of the same name.")]


def db_path() -> Path:
    """--db, else $STIMKIT_DB, else the store beside the study file in force (stimkit.duckdb in
    its folder, so a command finds it from any folder below), else ./stimkit.duckdb."""
    import os

    if state.get("db") or os.environ.get("STIMKIT_DB"):
        return state.get("db") or default_db()
    try:
        found = current_study()
    except StimkitError:  # a broken study file is said by the command that reads it
        found = None
    if found is not None and found.path is not None and not _builtin(found):
        from ..study import study as studies

        # a found study's store must be yours and never a link out of its folder (study.trust)
        return studies.store(found, default_db().name, named=bool(state.get("study") or os.environ.get(studies.STUDY_ENV)))
    return default_db()


def _builtin(found) -> bool:
    from ..paths import data_dir

    return found.path.parent.resolve() == (data_dir("queries") / "studies").resolve()


def catalog_dir():
    """--catalog-dir, else the study's `catalog` folder, else None (the store then reads
    $STIMKIT_CATALOG_DIR)."""
    if state.get("catalog_dir") is not None:
        return state["catalog_dir"]
    found = current_study()
    return found.catalog_dir if found is not None else None


def current_study():
    """The study in force for this command (--study, $STIMKIT_STUDY, or study.toml found from
    the working directory up), loaded once; None without one."""
    if "study_in_force" not in state:
        import os

        from ..study import study as studies

        # given --db, a study file above this folder that is refused or broken is passed over
        # with a warning: it must not block a command that names its store
        skip = (lambda message: err.print(f"warning: {message}", highlight=False, markup=False)) \
            if state.get("db") or os.environ.get("STIMKIT_DB") else None
        try:
            state["study_in_force"] = studies.in_force(state.get("study"), on_skip=skip)
        except StimkitError as e:  # said by every later call too: a broken study file never falls back to none
            state["study_in_force"] = e
    if isinstance(state["study_in_force"], StimkitError):
        raise state["study_in_force"]
    return state["study_in_force"]


def study_value(key: str, default=None):
    """A key of the study in force (alpha, correction, encoders, ...), else `default`: a flag the
    user typed is passed instead, so it overrides the key."""
    found = current_study()
    value = getattr(found, key, None) if found is not None else None
    return default if value is None or value == () else value


def format_option(*extra: str, help: str | None = None):
    """`--format/-f` declared the same way by every command: `fmt: Annotated[str | None, format_option()] = None`.

    `extra` adds a command's own formats (e.g. "sentbias"); STIMKIT_FORMAT sets a default."""

    def validate(value):
        try:
            return None if value is None else check_format(value, extra)
        except UsageError as e:
            raise typer.BadParameter(str(e)) from None

    names = " | ".join(FORMATS + extra)
    return typer.Option("--format", "-f", envvar="STIMKIT_FORMAT", callback=validate, show_default=False,
                        help=help or f"{names} (default: table on a terminal, csv otherwise).")


# Lines a person reads as a command runs (a result each) fit an 80-column terminal.
LINE_WIDTH = 80


def result_lines(head: str, *details: str, indent: int = 4) -> str:
    """One result as a person reads it on an 80-column terminal: a short first line naming it
    (test, template set, encoder), then each detail on its own indented line (numbers, then
    notes), each wrapped at spaces to LINE_WIDTH, never inside a number or a name."""
    import textwrap

    def fill(text: str, first: str) -> str:
        return textwrap.fill(text, LINE_WIDTH, initial_indent=first, subsequent_indent=" " * (indent + 2),
                             break_long_words=False, break_on_hyphens=False)

    return "\n".join([fill(head, ""), *(fill(d, " " * indent) for d in details if d)])
