"""The stimkit command line: a thin layer over the library (parse, call, print).

One module per command group; importing one registers its commands on the Typer app.
Typer builds every registered command's parameters on each start, so `main` registers
only the module of the command being run (`stimkit results` never builds `audit`);
`stimkit --help`, an unknown command and `stimkit.cli.app` get them all."""

from __future__ import annotations

import importlib
import shlex

# The modules in the order `stimkit --help` lists their commands, and which holds each command.
MODULES = ("stimuli", "encode", "association", "status", "audit", "wefat", "report", "debias", "train", "reliability")
COMMAND_MODULES = {
    "generate": "stimuli", "sets": "stimuli", "catalog": "stimuli", "export": "stimuli", "import": "stimuli",
    "templates": "stimuli",
    "encode": "encode", "encoders": "encode",
    "test": "association", "init": "association", "baseline": "association", "results": "association",
    "check": "association", "query": "association", "run": "association", "status": "status",
    "audit": "audit", "wefat": "wefat", "wefat-results": "wefat", "report": "report",
    "debias": "debias",
    "train": "train",
    "reliability": "reliability", "replicates": "reliability",
}
_GLOBAL_WITH_VALUE = {"--db", "--catalog-dir", "--study"}


def register(modules=MODULES):
    """Import command modules (each registers its commands once) and return the app."""
    for name in modules:
        importlib.import_module(f"{__name__}.{name}")
    from .common import app

    _literal_docstrings(app)
    _global_options_after(app)
    return app


def _global_options_after(typer_app) -> None:
    """Every command and group takes the global options after its name too (common.GlobalAfterCommand)."""
    from typer.core import TyperCommand, TyperGroup

    from .common import GlobalAfterCommand, GlobalAfterGroup

    def default(cls) -> bool:  # Typer's own class, or none yet (None, or Typer's placeholder for its default)
        return getattr(cls, "value", cls) in (None, TyperCommand, TyperGroup)

    for info in typer_app.registered_commands:
        if default(info.cls):
            info.cls = GlobalAfterCommand
    for group in typer_app.registered_groups:
        if default(group.cls):
            group.cls = GlobalAfterGroup
        _global_options_after(group.typer_instance)


def _literal_docstrings(typer_app) -> None:
    """A command's help is its docstring as written: Typer reads it as rich markup, where
    `{"rows": [the templates]}` loses its brackets; escaped here, once per command. A prose
    paragraph's lines are joined so the terminal wraps it; indented lines (examples) stay."""
    import inspect

    from rich.markup import escape

    def flowed(doc: str) -> str:
        paragraphs = doc.split("\n\n")
        return "\n\n".join(p if any(line[:1].isspace() for line in p.splitlines()) else " ".join(p.splitlines())
                           for p in paragraphs)

    for info in typer_app.registered_commands:
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = escape(flowed(inspect.getdoc(info.callback)))
    for group in typer_app.registered_groups:
        _literal_docstrings(group.typer_instance)


def command_of(args: list[str]) -> str | None:
    """The command word of a command line: the first argument that is not a global option."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _GLOBAL_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def _misplaced(root, args: list[str]) -> str | None:
    """For a command's own options typed before the command word (`stimkit --wordlist-dir D
    generate`): one line saying so, with the command line that puts them after it; else None."""
    command, path, at = root, [], None
    for i, arg in enumerate(args):
        sub = getattr(command, "commands", {}).get(arg) if not arg.startswith("-") else None
        if sub is not None:
            command, at = sub, (i if at is None else at)
            path.append(arg)
    if at is None:
        return None
    owned = {opt: p for p in command.params for opt in p.opts}
    before, moved, i = [], [], 0
    while i < at:
        name = args[i].split("=", 1)[0]
        if name in owned and not any(name in p.opts for p in root.params):
            takes_value = "=" not in args[i] and not (owned[name].is_flag or owned[name].count)
            moved += args[i:i + 1 + takes_value]
            i += 1 + takes_value
        else:
            before.append(args[i])
            i += 1
    if not moved:
        return None
    names = ", ".join(dict.fromkeys(m.split("=", 1)[0] for m in moved if m.startswith("-")))
    line = " ".join(shlex.quote(a) for a in before + args[at:] + moved)
    one = "," not in names
    return (f"{names} {'is an option' if one else 'are options'} of `stimkit {' '.join(path)}`, so "
            f"{'it goes' if one else 'they go'} after the command: stimkit {line}")


def __getattr__(name: str):
    if name == "app":  # the whole CLI, for CliRunner and documentation tools
        return register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(args: list[str] | None = None) -> None:
    """The console script: Click's own usage errors (a bad option value, a missing
    argument) become one line and exit 2, like stimkit's."""
    import sys

    import typer
    # Typer 0.29 carries its own Click; its exceptions live here.
    from typer._click import exceptions as click

    import warnings

    # A warning a command gives a person (e.g. encoders.EncoderWarning) is one line on stderr.
    warnings.formatwarning = lambda message, category, *rest, **kw: f"warning: {message}\n"
    args = sys.argv[1:] if args is None else list(args)
    command_module = COMMAND_MODULES.get(command_of(args))
    app = register([command_module] if command_module else MODULES)

    from rich.text import Text

    from .common import err

    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="stimkit", standalone_mode=False)
    except click.NoArgsIsHelpError as e:
        print(e.ctx.get_help() if e.ctx else str(e))
        code = 0
    except click.UsageError as e:
        where = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
        misplaced = _misplaced(command, args) if isinstance(e, click.NoSuchOption) else None
        message = misplaced or e.format_message().replace("\n", " ") + where
        err.print(Text.assemble(("error: ", "bold red"), message), highlight=False)
        code = 2
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted", highlight=False)
        code = 130
    except click.ClickException as e:
        err.print(Text.assemble(("error: ", "bold red"), e.format_message()), highlight=False)
        code = e.exit_code
    sys.exit(code or 0)
