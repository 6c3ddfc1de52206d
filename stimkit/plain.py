"""Plain rows: a query's rows as Python values with their columns and DuckDB types, for a
reading that only prints them (no polars frame, no duckdb import: the views use it at start-up)."""

from __future__ import annotations

from dataclasses import dataclass, replace


# The DuckDB types whose Python values `Rows` holds and the views print exactly as they print
# the same column of a polars frame (views.emit checks its writers against polars': a test).
PLAIN_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT",
                         "UINTEGER", "UBIGINT", "DOUBLE", "VARCHAR", "JSON", "TIMESTAMP", "VARCHAR[]"})


@dataclass(frozen=True)
class Rows:
    """A query's rows as Python values, with its columns and their DuckDB types: what a read
    command prints without building a polars frame (importing polars is a third of a small
    read's start-up). It offers the few frame operations the views use, under polars' names
    (`columns`, `height`, `rows[name]`, `iter_rows`, `select`, `head`); the library's readers
    return polars frames (store.frame, store.as_frame)."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: tuple[tuple, ...]

    @classmethod
    def of(cls, rel) -> Rows:
        """A relation's rows; its columns must be of PLAIN_TYPES and their names distinct."""
        types = tuple(str(t) for t in rel.types)
        odd = [f"{c} {t}" for c, t in zip(rel.columns, types) if t not in PLAIN_TYPES]
        if odd or len(set(rel.columns)) < len(rel.columns):
            raise TypeError(f"Rows holds distinct columns of {', '.join(sorted(PLAIN_TYPES))}; read "
                            f"{', '.join(odd) or 'a name given twice'} as a polars frame (store.as_frame)")
        return cls(tuple(rel.columns), types, tuple(rel.fetchall()))

    @property
    def height(self) -> int:
        return len(self.rows)

    def __getitem__(self, name: str) -> list:
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def iter_rows(self, named: bool = False):
        return (dict(zip(self.columns, row)) for row in self.rows) if named else iter(self.rows)

    def select(self, names) -> Rows:
        at = [self.columns.index(n) for n in names]
        return Rows(tuple(self.columns[i] for i in at), tuple(self.types[i] for i in at),
                    tuple(tuple(row[i] for i in at) for row in self.rows))

    def head(self, n: int) -> Rows:
        return replace(self, rows=self.rows[:n])

    def with_column(self, name: str, values: list, type_: str) -> Rows:
        """These rows with a new column last (a name they have already is refused)."""
        if name in self.columns:
            raise ValueError(f"Rows have a column {name!r} already")
        return replace(self, columns=self.columns + (name,), types=self.types + (type_,),
                       rows=tuple(row + (v,) for row, v in zip(self.rows, values)))
