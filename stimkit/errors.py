"""One error hierarchy: every error a user can cause is a StimkitError, raised by type and
matched by type (the CLI maps each type to its exit code; never by the message's text)."""

from __future__ import annotations


def first_line(e: BaseException) -> str:
    """An exception's message as one line (its first), or its type's name when it has none."""
    return str(e).splitlines()[0] if str(e) else type(e).__name__


class StimkitError(Exception):
    """A user-facing error: the CLI prints its message on one line and exits `exit_code`."""

    exit_code = 1


class UsageError(StimkitError):
    """A command line or definition that cannot mean anything (unknown name, bad option value)."""

    exit_code = 2


class InputError(StimkitError):
    """Input on which the work has no meaning: a set that selects nothing, degenerate vectors,
    a file that cannot be read. One test or encoder failing this way leaves the others running."""

    exit_code = 1


class StoreError(StimkitError):
    """The store itself: not a stimkit store, damaged, from a newer stimkit, or locked."""

    exit_code = 3


class Interrupted(StimkitError):
    """Ctrl-C: the command stopped and kept nothing half-written."""

    exit_code = 130
