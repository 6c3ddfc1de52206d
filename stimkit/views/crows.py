"""CrowS-Pairs results as the CLI prints them (`stimkit test crows-pairs`, `stimkit results crows`):
each scoring variant side by side, with the published tool it matches and the direction that is
"good"."""

from __future__ import annotations

import polars as pl

from .emit import MACHINE_FORMATS, emit, err

GOOD = ("metric score: % of pairs whose more stereotyping sentence (sent_more) scores higher; 50 is no "
        "preference, above 50 a preference for the stereotype (lower is not 'unbiased': the authors warn the "
        "data are noisy, Blodgett et al. 2021)")
SHOWN = ("test", "encoder", "variant", "split", "n", "wins", "neutral", "skipped", "score", "ci", "tool")


def chosen(df: pl.DataFrame, splits: str = "all") -> pl.DataFrame:
    """`splits`: all (every split), main (all pairs and the two directions) or a split's name."""
    if splits == "main":
        return df.filter(~pl.col("split").str.starts_with("bias:"))
    if splits != "all":
        return df.filter(pl.col("split") == splits)
    return df


def table(df: pl.DataFrame) -> pl.DataFrame:
    """The rows people read: the score with its interval in one column."""
    return df.with_columns(
        pl.col("score").round(2),
        pl.when(pl.col("ci_low").is_not_null())
        .then(pl.format("[{}, {}]", pl.col("ci_low").round(1), pl.col("ci_high").round(1)))
        .otherwise(pl.lit("")).alias("ci"))


def side_by_side(df: pl.DataFrame) -> pl.DataFrame:
    """One row per test x encoder x split, a column per variant (its score): the variants side by side."""
    return df.with_columns(pl.col("score").round(2)).pivot("variant", index=["test", "encoder", "split"],
                                                           values="score", sort_columns=False)


def show(df: pl.DataFrame, fmt: str, columns: str | None = None, splits: str = "all") -> None:
    """The rows of the chosen splits (machine formats: every stored column), then, on a
    terminal table, the variants side by side; what the score means goes to stderr."""
    df = chosen(df, splits)
    if fmt in MACHINE_FORMATS:
        emit(df, fmt)
    else:
        emit(table(df), fmt, columns.split(",") if columns else list(SHOWN), keep=("variant", "split", "score"))
        if fmt == "table" and df.height:
            emit(side_by_side(df), fmt, title="the variants side by side")
    err.print(GOOD, highlight=False, markup=False, emoji=False)
