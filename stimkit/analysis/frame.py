"""FamilyFrame: a polars frame read over a family (its own module: defining it imports polars,
which a reading that only prints leaves out)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from .families import Family


class FamilyFrame(pl.DataFrame):
    """A frame read over a family (results, checks, a query): the rows, and the family they were
    read over (`.family`: its m, alpha, correction, what was tested) with them, so no reader
    depends on what was read last. Operations on it give plain DataFrames."""

    family: Family | None = None

    @classmethod
    def of(cls, df: pl.DataFrame, family: Family) -> FamilyFrame:
        framed = cls._from_pydf(df._df)
        framed.family = family
        return framed
