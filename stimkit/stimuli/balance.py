"""Equal target sizes: which stimuli a balance policy keeps (seeded by the cut seed, the test
and its set versions only, never by the permutation seed)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..errors import UsageError
from ..choices import BALANCE_POLICIES
from ..seeding import rng_for



@dataclass
class Balanced:
    x: pl.DataFrame
    y: pl.DataFrame
    policy: str
    dropped: dict = field(default_factory=dict)  # role -> number of stimuli removed


def balance(x: pl.DataFrame, y: pl.DataFrame, policy: str, seed: int, test_name: str) -> Balanced:
    """Equalise target sizes. cut: seeded sample of stimuli (order kept), as the published
    sets were cut. drop-words: drop seeded random whole words from the larger set while
    it stays at least as large, then cut the rest. none: keep both as they are (the test
    then compares means of unequal sets). The draw depends on the seed (the cut seed, not
    the permutation seed), the test and its set versions only.

    Sets of a multi-slot template set carry each stimulus' context (`context_id`: the template
    and the other slots' words, stimuli.slots). Then balance covers the other slots: X and Y
    keep the same number of stimuli in every context (the same nouns and templates in both),
    a context only one side has is left out, and the cut is drawn within contexts."""
    if policy not in BALANCE_POLICIES:
        raise UsageError(f"unknown balance policy {policy!r} (known: {', '.join(BALANCE_POLICIES)})")
    contexts = all(CONTEXT in f.columns and f[CONTEXT].null_count() == 0 for f in (x, y))
    if policy == "none" or (x.height == y.height and not contexts):
        return Balanced(x, y, policy)
    given = {"x": x.height, "y": y.height}
    big_role, big, small = ("x", x, y) if x.height > y.height else ("y", y, x)
    versions = sorted({v for f in (x, y) if "set_version" in f.columns for v in f["set_version"].cast(pl.String).unique().to_list()})
    rng = rng_for(seed, "balance", test_name, policy, *versions)
    before = big.height
    if policy == "drop-words" and "word" in big.columns:
        big = _drop_words(big, small.height, rng)
    if contexts:
        x, y = (big, small) if big_role == "x" else (small, big)
        x, y = _within_contexts(x, y, rng)
        return Balanced(x, y, policy, {r: given[r] - f.height for r, f in (("x", x), ("y", y)) if given[r] > f.height})
    if big.height > small.height:
        keep = np.sort(rng.choice(big.height, size=small.height, replace=False))
        big = big[keep]
    x, y = (big, small) if big_role == "x" else (small, big)
    return Balanced(x, y, policy, {big_role: before - big.height})


CONTEXT = "context_id"


def _drop_words(big: pl.DataFrame, floor: int, rng) -> pl.DataFrame:
    """Drop seeded random whole words (with all their stimuli) while the set keeps >= floor."""
    counts = big.group_by("word", maintain_order=True).len()
    order = rng.permutation(counts.height)
    dropped_words, size = [], big.height
    for i in order:
        n = counts["len"][int(i)]
        if size - n >= floor:
            dropped_words.append(counts["word"][int(i)])
            size -= n
    return big.filter(~pl.col("word").is_in(dropped_words))


def _within_contexts(x: pl.DataFrame, y: pl.DataFrame, rng) -> tuple[pl.DataFrame, pl.DataFrame]:
    """X and Y cut to the same count in every context (min of the two; 0 where one lacks it),
    the stimuli kept in a context drawn at random (seeded), order kept."""
    nx = x.group_by(CONTEXT).len("_nx")
    ny = y.group_by(CONTEXT).len("_ny")
    keep = nx.join(ny, on=CONTEXT, how="full", coalesce=True).fill_null(0).select(
        CONTEXT, pl.min_horizontal("_nx", "_ny").alias("_keep"))

    def cut(f: pl.DataFrame) -> pl.DataFrame:
        drawn = f.with_columns(pl.Series("_key", rng.random(f.height)))
        drawn = drawn.with_columns((pl.col("_key").rank("ordinal").over(CONTEXT) - 1).alias("_rank"))
        drawn = drawn.join(keep, on=CONTEXT, how="left", maintain_order="left")
        return drawn.filter(pl.col("_rank") < pl.col("_keep")).drop("_key", "_rank", "_keep")

    return cut(x), cut(y)


