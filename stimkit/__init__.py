"""stimkit: stimuli, embeddings and association tests (WEAT / SEAT) in one DuckDB store."""

__version__ = "0.2.0"


class StimkitError(Exception):
    """A user-facing error: the CLI prints its message on one line and exits non-zero."""


class UsageError(StimkitError):
    """A command line that cannot mean anything (unknown pattern, bad option value): exit 2."""
