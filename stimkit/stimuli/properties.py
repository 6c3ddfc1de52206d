"""Property tables: a real-valued fact per word (WEFAT's p_w), as CSV files in properties/.

    # free comment lines (what it is, how it was derived, its source)
    word,value,unit,source
    engineer,10.7221,percent,BLS 2015

The table's name is the file's stem; its version is a content hash of its rows, so a
stored WEFAT result names exactly the values it used. Words match targets ignoring case.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .. import StimkitError, store
from ..errors import InputError
from ..store import usersql
from .sets import is_sql
from ..paths import data_dir

COLUMNS = ("word", "value", "unit", "source")


@dataclass(frozen=True)
class PropertyTable:
    name: str
    path: str
    values: dict[str, float]      # lower-cased word -> value
    words: dict[str, str]         # lower-cased word -> word as written
    unit: str
    source: str

    @property
    def version(self) -> str:
        rows = sorted((self.words[k], v) for k, v in self.values.items())
        blob = json.dumps([self.name, self.unit, self.source, rows])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def get(self, word: str) -> float | None:
        return self.values.get(word.lower())


def parse_file(path: Path) -> PropertyTable:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise StimkitError(f"{path}: cannot read property table: {e.strerror}") from None
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise StimkitError(f"{path}: empty property table (expected a header {','.join(COLUMNS)})")
    header_line, header = numbered[0][0], next(csv.reader([numbered[0][1]]))
    if [h.strip() for h in header[:2]] != ["word", "value"]:
        raise StimkitError(f"{path}:{header_line}: header must start with word,value (columns: {','.join(COLUMNS)})")
    names = [h.strip() for h in header]
    values, words, units, sources = {}, {}, set(), set()
    for number, line in numbered[1:]:
        row = dict(zip(names, (c.strip() for c in next(csv.reader([line])))))
        word, raw = row.get("word", ""), row.get("value", "")
        if not word:
            raise StimkitError(f"{path}:{number}: empty word")
        try:
            value = float(raw)
        except ValueError:
            raise StimkitError(f"{path}:{number}: value {raw!r} of word {word!r} is not a number") from None
        if not math.isfinite(value):
            raise StimkitError(f"{path}:{number}: value {raw!r} of word {word!r} is not a finite number")
        if word.lower() in values:
            raise StimkitError(f"{path}:{number}: duplicate word {word!r}")
        values[word.lower()], words[word.lower()] = value, word
        units.add(row.get("unit", "")), sources.add(row.get("source", ""))
    if not values:
        raise StimkitError(f"{path}: no rows after the header")
    return PropertyTable(path.stem, str(path), values, words, ";".join(sorted(units)), ";".join(sorted(sources)))


def load(ref: str) -> PropertyTable:
    """A table by name (properties/<name>.csv) or by path to a CSV file."""
    candidate = Path(ref)
    if candidate.suffix == ".csv" and candidate.exists():
        return parse_file(candidate)
    path = data_dir("properties") / f"{ref}.csv"
    if not path.exists():
        known = sorted(p.stem for p in data_dir("properties").glob("*.csv"))
        raise StimkitError(f"unknown property table {ref!r} (known: {', '.join(known) or 'none'})")
    return parse_file(path)


def save(con, table: PropertyTable) -> str:
    """Store the table's rows under its version (once: a version never changes); returns the version."""
    version = table.version
    with store.transaction(con):
        if not store.one(con, "SELECT 1 FROM property_tables WHERE version = ?", [version]):
            con.execute("INSERT INTO property_tables (version, name, unit, source, path, n_values) VALUES (?, ?, ?, ?, ?, ?)",
                        [version, table.name, table.unit, table.source, table.path, len(table.values)])
            con.executemany("INSERT INTO property_values (version, word, value) VALUES (?, ?, ?)",
                            [[version, table.words[k], v] for k, v in table.values.items()])
    return version


def read_property(con, ref: str) -> tuple[dict[str, float], PropertyTable | None]:
    """(lower-cased word -> value, the property table to store; None for SQL)."""
    if is_sql(ref):
        sql = usersql.check_select(ref, f"property query {ref!r}")
        try:
            df = store.frame(con, sql)
        except duckdb.Error as e:
            raise InputError(f"property: query failed: {usersql.first_line(e)} -- in: {ref}") from None
        if not {"word", "value"} <= set(df.columns):
            raise InputError(f"property: query must return `word` and `value` columns -- in: {ref}")
        return {str(w).lower(): float(v) for w, v in zip(df["word"], df["value"]) if v is not None}, None
    table = load(ref)
    return table.values, table
