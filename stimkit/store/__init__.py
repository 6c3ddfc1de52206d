"""The DuckDB store: connection and migrations, all-or-nothing writes, reading helpers."""

from .connection import *  # noqa: F401,F403
from .connection import _open_transactions  # noqa: F401
