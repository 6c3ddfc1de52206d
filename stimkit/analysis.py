"""Queries over the results: the `family` view, named SQL files, Table 4, export formats."""

from __future__ import annotations

import re

import polars as pl

from . import StimkitError, store
from .paths import data_dir

LATEST_RUN = "run_id = (SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1)"
CORRECTIONS = ("holm", "bh", "by", "none")
SENTBIAS_COLUMNS = ["model", "options", "test", "p_value", "effect_size", "num_targ1", "num_targ2", "num_attr1", "num_attr2"]


def define_family(con, where: str | None = None, alpha: float = 0.01) -> int:
    """(Re)define the temp view `family` the analysis queries read; returns its row count."""
    clause = where or LATEST_RUN
    try:
        con.execute(f"CREATE OR REPLACE TEMP VIEW family AS SELECT * FROM results WHERE {clause}")
        con.execute(f"SET VARIABLE alpha = {float(alpha)!r}")
        n = store.one(con, "SELECT count(*) FROM family")[0]
    except Exception as e:
        raise StimkitError(f"--where {clause!r}: {str(e).splitlines()[0]}") from None
    if n == 0:
        raise StimkitError(f"no results where {clause} (run `stimkit test` first)")
    return n


def named_query(name: str) -> str | None:
    path = data_dir("queries") / f"{name}.sql"
    return path.read_text() if re.fullmatch(r"[\w-]+", name) and path.exists() else None


def run_sql(con, sql: str) -> pl.DataFrame:
    try:
        return store.frame(con, sql.strip().rstrip(";"))
    except Exception as e:
        raise StimkitError(f"query failed: {str(e).splitlines()[0]}") from None


def corrected(con, method: str) -> pl.DataFrame:
    if method not in CORRECTIONS:
        raise StimkitError(f"unknown correction {method!r} (known: {', '.join(CORRECTIONS)})")
    if method == "none":
        return run_sql(con, "SELECT *, p_value AS p_adjusted, p_value <= getvariable('alpha') AS rejected FROM family ORDER BY p_value")
    return run_sql(con, named_query(method))


def table4(df: pl.DataFrame, alpha: float, order: list[str], encoders: list[str] | None = None) -> tuple[list[str], list[dict]]:
    """Tests x encoders with d and May et al.'s marks: * p <= alpha, ** still after correction."""
    present = set(df["encoder"].to_list())
    encoders = [e for e in (encoders or []) if e in present] + sorted(present - set(encoders or []))
    cells: dict[str, dict] = {}
    for r in df.iter_rows(named=True):
        mark = "**" if r["rejected"] else ("*" if r["p_value"] <= alpha else "")
        cells.setdefault(r["test"], {"test": r["test"]})[r["encoder"]] = f"{r['effect_size']:+.2f}{mark}"
    rank = {t: i for i, t in enumerate(order)}
    rows = sorted(cells.values(), key=lambda c: (rank.get(c["test"], len(rank)), c["test"]))
    return ["test", *encoders], rows


SEAT_NAMES = {"n_x": "num_targ1", "n_y": "num_targ2", "n_a": "num_attr1", "n_b": "num_attr2"}


def with_seat_names(df: pl.DataFrame) -> pl.DataFrame:
    """Results with the original SEAT code's column names where the two overlap
    (num_targ1.., and `options`: the encoder's options), so its analysis scripts read them."""
    options = pl.col("encoder").str.splitn(",", 2).struct.field("field_1").fill_null("").str.replace_all(",", ";")
    return df.rename({k: v for k, v in SEAT_NAMES.items() if k in df.columns}).with_columns(options=options)


def sentbias_rows(df: pl.DataFrame) -> pl.DataFrame:
    """The original SEAT code's results.tsv layout."""
    return with_seat_names(df).select(SENTBIAS_COLUMNS)
