"""Where stimkit's data folders live: inside an installed wheel, or at the repo root."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder `name` (templates, wordlists, db, queries, properties)."""
    override = os.environ.get(f"STIMKIT_{name.upper()}")
    if override:
        return Path(override)
    bundled = _PACKAGE / "_data" / name
    if bundled.is_dir():
        return bundled
    return _PACKAGE.parent / name


def default_db() -> Path:
    return Path(os.environ.get("STIMKIT_DB", "stimkit.duckdb"))
