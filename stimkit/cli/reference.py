"""The CLI reference as Markdown, built from the app itself (docs/cli.md is filled with it when
the site builds: scripts/mkdocs_hooks.py). Every command, group and option the parser knows
is listed, hidden ones marked, so the manual cannot lag behind `--help`
(tests/test_docs.py checks it against the same walk)."""

from __future__ import annotations

import inspect
import textwrap


def root():
    """The whole app as a Click command (every command module registered)."""
    import typer

    from . import register

    return typer.main.get_command(register())


def commands(command=None, path: tuple[str, ...] = ()):
    """(path, command) of every command and group below the root, in the order `--help` lists them."""
    command = command or root()
    for name, sub in getattr(command, "commands", {}).items():
        yield (*path, name), sub
        yield from commands(sub, (*path, name))


def _escape(text: str) -> str:
    """Markdown prose: Rich's escaped brackets undone, angle brackets shown, not read as HTML."""
    return text.replace("\\[", "[").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain(text: str | None) -> str:
    """A docstring as Markdown: prose paragraphs as they are, indented lines (examples) as a code block."""
    out = []
    for paragraph in inspect.cleandoc(text or "").split("\n\n"):
        lines = paragraph.splitlines()
        examples = [i for i, line in enumerate(lines) if line[:1].isspace()]
        if not examples:
            out.append(_escape(paragraph))
            continue
        head, body = lines[:examples[0]], lines[examples[0]:]
        if head:
            out.append(_escape("\n".join(head)))
        out.append("```text\n" + "\n".join(textwrap.dedent("\n".join(body)).replace("\\[", "[").splitlines()) + "\n```")
    return "\n\n".join(out)


def _cell(text: str) -> str:
    return _escape(" ".join(text.split())).replace("|", "\\|")


def _names(param) -> str:
    if param.param_type_name == "argument":
        return f"`{(param.metavar or param.name).upper()}`"
    names = ", ".join(f"`{o}`" for o in param.opts)
    if getattr(param, "secondary_opts", None):
        names += " / " + ", ".join(f"`{o}`" for o in param.secondary_opts)
    return names


def _row(param, ctx) -> str:
    """One table row: names, what it takes, and its help with its default as `--help` says it."""
    takes = "" if getattr(param, "is_flag", False) else param.display_type(ctx).strip("<>")
    if takes.startswith("list[") and takes.endswith("]"):
        takes = takes[5:-1] + ", repeatable"
    record = param.get_help_record(ctx)
    help_text = record[1] if record else (getattr(param, "help", None) or "")
    hidden = " *(hidden)*" if getattr(param, "hidden", False) else ""
    return f"| {_names(param)} | {takes} | {_cell(help_text)}{hidden} |"


def section(path: tuple[str, ...], command) -> str:
    """One command's section: its help, usage, and a table of its arguments and options by panel."""
    lines = [f"## `stimkit {' '.join(path)}`", ""]
    if getattr(command, "hidden", False):
        lines += ["*Hidden: kept for old scripts.*", ""]
    lines += [_plain(command.help), ""]
    ctx = command.context_class(command, info_name=" ".join(("stimkit", *path)))
    usage = " ".join(("stimkit", *path, *command.collect_usage_pieces(ctx)))
    lines += ["```text", usage, "```", ""]
    subs = getattr(command, "commands", {})
    if subs:
        lines += ["Subcommands: " + ", ".join(f"[`{n}`](#stimkit-{'-'.join((*path, n))})" for n in subs), ""]
    panels: dict[str, list] = {}
    for param in command.params:
        panels.setdefault(getattr(param, "rich_help_panel", None) or "", []).append(param)
    for panel, params in panels.items():
        if panel:
            lines += [f"**{panel}**", ""]
        lines += ["| option | takes | what it does |", "|---|---|---|"]
        lines += [_row(p, ctx) for p in params]
        lines.append("")
    return "\n".join(lines)


def reference() -> str:
    """The whole reference: the global options, then each command in `stimkit --help`'s order."""
    top = root()
    parts = [section((), top).replace("## `stimkit `", "## Global options", 1)]
    parts += [section(path, command) for path, command in commands(top)]
    return "\n".join(parts)
