"""Equal target sizes: which stimuli a balance policy keeps (seeded by the cut seed, the test
and its set versions only, never by the permutation seed)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..errors import UsageError
from ..checks import BALANCE_POLICIES
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
    the permutation seed), the test and its set versions only."""
    if policy not in BALANCE_POLICIES:
        raise UsageError(f"unknown balance policy {policy!r} (known: {', '.join(BALANCE_POLICIES)})")
    if x.height == y.height or policy == "none":
        return Balanced(x, y, policy)
    big_role, big, small = ("x", x, y) if x.height > y.height else ("y", y, x)
    versions = sorted({v for f in (x, y) if "set_version" in f.columns for v in f["set_version"].cast(pl.String).unique().to_list()})
    rng = rng_for(seed, "balance", test_name, policy, *versions)
    before = big.height
    if policy == "drop-words" and "word" in big.columns:
        counts = big.group_by("word", maintain_order=True).len()
        order = rng.permutation(counts.height)
        dropped_words, size = [], big.height
        for i in order:
            n = counts["len"][int(i)]
            if size - n >= small.height:
                dropped_words.append(counts["word"][int(i)])
                size -= n
        big = big.filter(~pl.col("word").is_in(dropped_words))
    if big.height > small.height:
        keep = np.sort(rng.choice(big.height, size=small.height, replace=False))
        big = big[keep]
    x, y = (big, small) if big_role == "x" else (small, big)
    return Balanced(x, y, policy, {big_role: before - big.height})


