"""The stimkit command line: a thin layer over the library (parse, call, print).

One module per command group; importing them registers their commands on `app`."""

from __future__ import annotations

from . import audit, encode, report, stimuli, tests, wefat  # noqa: F401  (registers the commands)
from .common import app


def main(args: list[str] | None = None) -> None:
    """The console script: Click's own usage errors (a bad option value, a missing
    argument) become one line and exit 2, like stimkit's."""
    import sys

    import typer
    # Typer 0.29 carries its own Click; its exceptions live here.
    from typer._click import exceptions as click

    from .common import err
    from rich.text import Text

    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="stimkit", standalone_mode=False)
    except click.NoArgsIsHelpError as e:
        print(e.ctx.get_help() if e.ctx else str(e))
        code = 0
    except click.UsageError as e:
        where = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
        err.print(Text.assemble(("error: ", "bold red"), e.format_message().replace("\n", " ") + where), highlight=False)
        code = 2
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted", highlight=False)
        code = 130
    except click.ClickException as e:
        err.print(Text.assemble(("error: ", "bold red"), e.format_message()), highlight=False)
        code = e.exit_code
    sys.exit(code or 0)
