"""Split-half reliability of a target set: do its words agree? A pure function over arrays.

A target set is an instrument whose items are its words. Each word w has a profile over the
test's attribute items j (A then B): cos(w, j), a word's sentences averaged in a sentence
test, less the mean over all the test's targets (X u Y) of cos(., j), so that what every
target shares with an attribute item (its frequency, the space's common direction) drops
out and what is left is how the word leans relative to the test's targets. Split the set's
words in two halves; if its words measure one thing, the halves' mean profiles agree across
the attribute items. Their Pearson r, averaged over splits, is stepped up to the whole set's
length by Spearman-Brown: 2r / (1 + r).
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np

from .weat import unit_rows


def profiles(T: np.ndarray, word_ids: np.ndarray, A: np.ndarray, B: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """(words, |A| + |B|): each word's mean cosine with every attribute item, less the mean
    of the reference rows' (the test's targets') cosines with that item. word_ids: a word
    index (0..W-1) per row of T."""
    U = np.concatenate([unit_rows(A), unit_rows(B)])
    words = int(word_ids.max()) + 1
    # a mean of cosines with u is the mean unit vector's dot with u: average the (few) unit
    # vectors first, then one product, not a cosine per stimulus and attribute item
    member = np.zeros((words, len(word_ids)))
    member[word_ids, np.arange(len(word_ids))] = 1.0
    means = (member @ unit_rows(T)) / member.sum(axis=1, keepdims=True)
    return (means - unit_rows(reference).mean(axis=0)) @ U.T


def split_half(profile: np.ndarray, rng: np.random.Generator, n_splits: int = 200) -> float:
    """Spearman-Brown split-half reliability of the rows (items) of `profile` (items x
    observations): every split into halves when there are at most `n_splits`, else that many
    random ones. NaN with fewer than 4 items or 2 observations (no correlation to speak of)."""
    profile = np.asarray(profile, dtype=np.float64)
    n, m = profile.shape
    if n < 4 or m < 2:
        return float("nan")
    half = n // 2
    total = comb(n, half) // (2 if 2 * half == n else 1)  # a split and its mirror are one split
    if total <= n_splits:
        chosen = [c for c in combinations(range(n), half) if 2 * half != n or 0 in c]
        ind = np.zeros((len(chosen), n), dtype=bool)
        ind[np.arange(len(chosen))[:, None], np.array(chosen)] = True
    else:
        keys = rng.random((n_splits, n))
        ind = np.zeros((n_splits, n), dtype=bool)
        ind[np.arange(n_splits)[:, None], np.argpartition(keys, half - 1, axis=1)[:, :half]] = True
    one = ind @ profile / half
    two = (~ind) @ profile / (n - half)
    one -= one.mean(axis=1, keepdims=True)
    two -= two.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (one * two).sum(axis=1) / np.sqrt((one ** 2).sum(axis=1) * (two ** 2).sum(axis=1))
    r = float(np.nanmean(r)) if np.isfinite(r).any() else float("nan")
    return 2 * r / (1 + r) if np.isfinite(r) and r > -1 else float("nan")
