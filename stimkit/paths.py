"""Where stimkit's data folders live: inside an installed wheel, or at the repo root."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


# Overrides of the data folders; the schema folder is not STIMKIT_DB (that names the store).
OVERRIDES = {"templates": "STIMKIT_TEMPLATES_DIR", "wordlists": "STIMKIT_WORDLISTS_DIR", "db": "STIMKIT_SCHEMA_DIR",
             "queries": "STIMKIT_QUERIES_DIR", "properties": "STIMKIT_PROPERTIES_DIR"}


def data_dir(name: str) -> Path:
    """The folder `name` (templates, wordlists, db, queries, properties)."""
    override = os.environ.get(OVERRIDES.get(name, f"STIMKIT_{name.upper()}_DIR"))
    if override:
        return Path(override)
    bundled = _PACKAGE / "_data" / name
    if bundled.is_dir():
        return bundled
    return _PACKAGE.parent / name


def default_db() -> Path:
    return Path(os.environ.get("STIMKIT_DB", "stimkit.duckdb"))
