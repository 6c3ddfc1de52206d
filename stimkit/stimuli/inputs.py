"""Checks on what users hand in: names that end up in file or set names (tests, word
lists, template sets), and text files that must be UTF-8."""

from __future__ import annotations

import re

from ..errors import StimkitError, UsageError

_UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f]|\.\.")
MAX_LENGTH = 200


def check_name(name, what: str, where: str = "", forbid: str = "") -> str:
    """`name` if it is one path component without `..`, control characters, surrounding
    spaces or any character of `forbid`; else a one-line StimkitError."""
    problem = None
    if not isinstance(name, str) or not name.strip():
        problem = "is empty"
    elif _UNSAFE.search(name):
        problem = "has a path separator, '..' or a control character"
    elif name != name.strip():
        problem = "starts or ends with a space"
    elif len(name) > MAX_LENGTH:
        problem = f"is longer than {MAX_LENGTH} characters"
    elif forbid and any(c in name for c in forbid):
        problem = f"has one of {' '.join(forbid)}"
    if problem:
        prefix = f"{where}: " if where else ""
        raise StimkitError(f"{prefix}{what} name {name!r} {problem}")
    return name


def decode(data: bytes, path) -> str:
    """UTF-8 text of a file, or a one-line error naming the file, line and byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise StimkitError(f"{path}:{line}: not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def read_text(path) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise StimkitError(f"{path}: cannot read: {e.strerror or e}") from None
    return decode(data, path)


def read_toml(path) -> dict:
    """A definition file's tables, or one line naming the file when it is not valid TOML."""
    import tomllib

    try:
        return tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None


def inside(path, folder, what: str):
    """`path` with symlinks resolved, if it stays inside `folder` (itself resolved); else a
    one-line error: a link to /etc/hostname must not become a template or a word list."""
    from pathlib import Path

    real, root = Path(path).resolve(), Path(folder).resolve()
    if not real.is_relative_to(root):
        raise StimkitError(f"{path}: {what} leads outside {folder} (to {real}); copy the file in instead of linking it")
    return real
