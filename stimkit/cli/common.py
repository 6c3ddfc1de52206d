"""What every command shares: the Typer app, the consoles, the store path, the error handler, printing."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import StimkitError, __version__
from ..output import FORMATS, emit, emit_document, err, format_option, out, print_rows  # noqa: F401  (one output layer)
from ..paths import default_db

app = typer.Typer(help="stimkit: bias-test stimuli, embeddings and association tests in one DuckDB store.",
                  no_args_is_help=True, add_completion=False)

# `out` and `err` (from output.py) print text as it is: prose that wants markup passes markup=True.
state = {"db": None}


def fail(message: str, code: int = 1):
    """One line on stderr, never read as markup, then exit with `code`."""
    from rich.text import Text

    err.print(Text.assemble(("error: ", "bold red"), str(message).replace("\n", " ")), highlight=False)
    raise typer.Exit(code)


def handles_errors(fn):
    """Every expected error becomes one line on stderr, exiting with its class's code
    (errors.py: input 1, usage 2, store 3, Ctrl-C 130). Anything else is a bug: one line too, the traceback only with --debug."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import duckdb

        from ..store import remove_if_empty

        succeeded = False
        try:
            result = fn(*args, **kwargs)
            succeeded = True
            return result
        except typer.Exit as e:
            succeeded = not e.exit_code
            raise
        except StimkitError as e:
            fail(str(e), e.exit_code)
        except (KeyboardInterrupt, duckdb.InterruptException):
            fail("interrupted; nothing half-written was kept", 130)
        except duckdb.Error as e:
            if "KeyboardInterrupt" in str(e):  # Ctrl-C while DuckDB was reading a Python object (an Arrow append)
                fail("interrupted; nothing half-written was kept", 130)
            # An IO error from the store file itself (truncated, unreadable) is the store's: exit 3.
            fail(f"store {db_path()}: {str(e).splitlines()[0]}", 3 if isinstance(e, duckdb.IOException) else 1)
        except OSError as e:
            fail(f"{e.filename + ': ' if e.filename else ''}{e.strerror or e}", 1)
        except Exception as e:
            if "interrupted" in str(e).lower() and isinstance(e, RuntimeError):  # Ctrl-C inside a DuckDB or polars call
                fail("interrupted; nothing half-written was kept", 130)
            if state.get("debug"):
                raise
            fail(f"internal error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
                 "(run with --debug for the traceback)", 1)
        finally:  # every store the command opened: a traceback kept alive must not keep the file open
            while _opened:
                opened, created = _opened.pop()
                opened.close()
                if created and not succeeded:  # a failed command leaves no new empty store behind
                    remove_if_empty(opened.path)

    return wrapper


def open_store(read_only: bool = False, allow_files: bool = False):
    """The store as a library object (`with open_store() as store: ... store.con`). Read
    commands open it read-only: they never create a file, and wait while another process
    writes."""
    from ..api import Store

    created = not read_only and not db_path().exists()
    opened = Store(db_path(), read_only, on_wait=lambda message: err.print(message, highlight=False), allow_files=allow_files)
    _opened.append((opened, created))
    return opened


# Stores opened by the running command, each with whether the command created its file:
# all are closed when it ends, and one it created is removed again if it failed having
# written nothing (a typo'd test name on a fresh path must not leave a store for reads to find).
_opened: list = []


def _print_version(value: bool):
    if value:
        out.print(f"stimkit {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def main_options(
    db: Annotated[Optional[Path], typer.Option("--db", envvar="STIMKIT_DB", help="The DuckDB store (default ./stimkit.duckdb).")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
):
    state["db"] = db
    state["debug"] = debug


def db_path() -> Path:
    return state["db"] or default_db()


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
