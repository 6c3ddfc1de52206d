"""What every command shares: the Typer app, the consoles, the store path, the error handler, printing."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from .. import StimkitError, __version__, store
from ..output import FORMATS, emit, emit_document, err, format_option, out, print_rows  # noqa: F401  (one output layer)
from ..paths import default_db

app = typer.Typer(help="stimkit: bias-test stimuli, embeddings and association tests in one DuckDB store.",
                  no_args_is_help=True, add_completion=False)

# `out` and `err` (from output.py) print text as it is: prose that wants markup passes markup=True.
state = {"db": None}


def handles_errors(fn):
    """Print a StimkitError as one line on stderr and exit 1."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except StimkitError as e:
            err.print(f"[bold red]error:[/] {escape(str(e))}", markup=True)
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


def db_path() -> Path:
    return state["db"] or default_db()


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
