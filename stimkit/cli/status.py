"""`stimkit status`: what today's files change for the study, before `run` makes it (reads only)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .. import DEFAULT_PAPER
from ..errors import UsageError
from .common import app, current_study, db_path, emit, err, format_option, handles_errors, open_store


@app.command("status")
@handles_errors
def status_cmd(
    study: Annotated[Optional[str], typer.Argument(
        help="A built-in study (may-2019, tan-celis-2019) or a study file (.toml). Default: the study found here, "
             "else may-2019.")] = None,
    encoder: Annotated[Optional[list[str]], typer.Option("--encoder", "-e", help="Encoders (default: the study's).")] = None,
    every: Annotated[bool, typer.Option("--all", help="Every row, the current ones too (default: what is not current).")] = False,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """What the study's files change: sets to generate or regenerate, results and baselines
    that are missing or out of date, and the command that brings each up to date.

    A set is current when the version its word list and templates give now is the one in use;
    a result when one is stored under today's input key (its sets by role, encoder, procedure
    and stimkit version). `stimkit run` makes exactly what is not current. Reads only.

    Examples:
      stimkit status
      stimkit status --all --format csv
    """
    import polars as pl
    from dataclasses import asdict

    chosen = study or current_study() or DEFAULT_PAPER
    if not db_path().exists():
        raise UsageError(f"no store at {db_path()} yet: `stimkit run` generates, encodes and tests everything")
    with open_store(read_only=True) as store:
        rows = store.status(chosen, encoder)
    shown = [r for r in rows if every or r.state != "current"]
    columns = ["kind", "name", "encoder", "state", "detail", "command"]
    emit(pl.DataFrame([asdict(r) for r in shown], schema={c: pl.String for c in columns}), fmt)
    todo = [r for r in rows if r.state != "current"]
    # every kind not current is counted (ceat, wording and crows rows too, after the usual three)
    kinds = dict.fromkeys(["set", "result", "baseline", *(r.kind for r in todo)])
    counts = {_KIND_WORDS.get(k, k): sum(1 for r in todo if r.kind == k) for k in kinds}
    if todo:
        err.print(", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in counts.items() if n)
                  + f" not current (of {len(rows)}): `stimkit run` brings them up to date", highlight=False)
    else:
        err.print(f"everything is current ({len(rows)} sets, results and baselines): `stimkit run` would compute "
                  "nothing", highlight=False)


_KIND_WORDS = {"crows": "CrowS result", "ceat": "CEAT result", "wording": "wording audit"}
