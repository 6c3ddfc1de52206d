"""The DuckDB store: connection and migrations (connection), the one insert path and runs
(writes), and SQL a user types, which can only read (usersql)."""

from .connection import *  # noqa: F401,F403
from .connection import _open_transactions  # noqa: F401
from .writes import all_or_nothing, as_record, column, insert, latest_study_run, start_run  # noqa: F401
