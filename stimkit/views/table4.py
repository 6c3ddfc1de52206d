"""Table 4 (tests x encoders, d with its marks and interval), one rendering for `stimkit run`,
`stimkit results --table` and the report: the same result gives the same cell in each."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ..analysis import paper_tables as paper


@dataclass
class Table4View:
    """The grid: a row per hypothesis under its label (the test, or its categories), a column
    per encoder under its display name; `t4` keeps the numbers behind each cell."""
    columns: list[str]
    rows: list[dict]
    t4: paper.Table4
    names: dict[str, str] = field(default_factory=dict)
    heads: dict[str, str] = field(default_factory=dict)  # row label -> the label shown (categories)

    def cells(self) -> dict[tuple[str, str], str]:
        """(row, column) -> the text a reader sees, for every filled cell."""
        return {(r[self.columns[0]], c): r[c] for r in self.rows for c in self.columns[1:] if r.get(c) is not None}

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema={c: pl.String for c in self.columns}, orient="row")

    def legend(self, correction: str, alpha: float, family) -> str:
        """The marks that appear in the cells (only those), the interval and the row-label note."""
        cells = [v for r in self.rows for k, v in r.items() if k != self.columns[0]]
        return (paper.mark_note(correction, alpha, family, cells) + ("; [95% interval of d]" if self.t4.ci else "")
                + (f"; {self.t4.note}" if self.t4.note else ""))


def table4(results: pl.DataFrame, alpha: float, order: list[str] | None = None, encoders: list[str] | None = None,
           names: dict[str, str] | None = None, categories: dict[str, str] | None = None) -> Table4View:
    """Table 4 of a family's corrected results at `alpha`: rows in `order` (then the rest by
    name), encoders in `encoders` order under `names` (default: the results' display names);
    `categories` (test -> "X vs Y / A vs B"): head each row by its test's categories."""
    t4 = paper.table4(results, alpha, order, encoders)
    names = names if names is not None else paper.display_names(results)
    heads = {}
    if categories:
        for label in t4.rows:
            test, _, variant = label.partition(" (")
            if test in categories:
                heads[label] = categories[test] + (f" ({variant}" if variant else "")
        shared = {h for h in heads.values() if list(heads.values()).count(h) > 1}
        heads = {label: f"{h} [{label}]" if h in shared else h for label, h in heads.items()}  # two tests, one head
    columns, rows = t4.grid(names)
    for row in rows:
        row["test"] = heads.get(row["test"], row["test"])
    return Table4View(columns, rows, t4, names, heads)
