"""WEAT / SEAT statistics as pure functions over arrays (Caliskan et al. 2017; May et al. 2019, appendix A).

Notation: X, Y targets, A, B attributes, rows are vectors.

    s(w, A, B)   = mean_a cos(w, a) - mean_b cos(w, b)            association
    s(X, Y, A, B) = sum_x s(x) - sum_y s(y)                         test statistic
    d            = (mean_x s(x) - mean_y s(y)) / std_{X u Y} s(w)   effect size (ddof recorded)
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError


class InvalidInput(InputError):
    """Inputs on which the statistics have no meaning (the message names test and encoder)."""


def check_inputs(X, Y, A, B, what: str = "test") -> None:
    """Refuse inputs on which s(w) or d has no meaning, before computing anything."""
    for name, m in (("X", X), ("Y", Y), ("A", A), ("B", B)):
        m = np.asarray(m)
        if m.ndim != 2 or m.shape[0] == 0:
            raise InvalidInput(f"{what}: set {name} must be a non-empty 2-d array of vectors, got shape {m.shape}")
        if not np.isfinite(m).all():
            raise InvalidInput(f"{what}: set {name} holds NaN or infinite values")
        zero = np.flatnonzero(np.linalg.norm(m, axis=1) == 0)
        if zero.size:
            raise InvalidInput(f"{what}: set {name} item {int(zero[0])} is a zero vector (cosine undefined)")
    dims = {np.asarray(m).shape[1] for m in (X, Y, A, B)}
    if len(dims) > 1:
        raise InvalidInput(f"{what}: the sets have vectors of different sizes {sorted(dims)}")
    for name, m in (("X", X), ("Y", Y)):
        if len(m) < 2:
            raise InvalidInput(f"{what}: set {name} has {len(m)} item; d needs at least 2 per target set "
                               "(with 1 a side |d| = sqrt(2) whatever the data)")
    if _rows(X) == _rows(Y):
        raise InvalidInput(f"{what}: X and Y hold the same items: there is nothing to compare")


def _rows(m) -> set:
    m = np.ascontiguousarray(m, dtype=np.float64)
    return {r.tobytes() for r in m}


def shared_vectors(V: np.ndarray, units: list, atol: float = 1e-9) -> int:
    """How many rows share their vector (cosine at least 1 - atol: equal but for the last
    float bits, which batching moves) with a row of another unit (word): an encoder that
    gives different words one vector cannot tell them apart, as use-m3 with words of a
    script it has few pieces for. Rows of one unit (a word's
    sentences, which word order alone may not tell apart in a CBoW) do not count.

    Without comparing every pair: two unit vectors that close lie within sqrt(2 atol) of each
    other, so their projections on any unit direction do too; only rows whose projections
    are that close (a window over the sorted projections) are compared."""
    V = np.asarray(V)
    n = len(V)
    if n < 2:
        return 0
    codes = np.unique(np.asarray([str(u) for u in units], dtype=object), return_inverse=True)[1]
    norms = np.sqrt(np.einsum("ij,ij->i", V, V, dtype=np.float64))
    direction = np.random.default_rng(0).normal(size=V.shape[1])
    projected = (V @ (direction / np.linalg.norm(direction)).astype(V.dtype)) / norms
    order = np.argsort(projected, kind="stable")
    sorted_p = projected[order]
    slack = np.sqrt(2 * atol) + 1e-5  # and the float32 rounding of a projection
    width = np.searchsorted(sorted_p, sorted_p + slack, side="right") - np.arange(n) - 1
    first = np.repeat(np.arange(n), width)
    second = first + 1 + np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width)
    a, b = order[first], order[second]
    other = codes[a] != codes[b]  # pairs within a word never count: compare only the others
    a, b = a[other], b[other]
    cos = np.einsum("ij,ij->i", V[a].astype(np.float64), V[b].astype(np.float64)) / (norms[a] * norms[b])
    close = cos >= 1 - atol
    hit = np.zeros(n, dtype=bool)
    hit[a[close]] = hit[b[close]] = True
    return int(hit.sum())


def check_associations(sx: np.ndarray, sy: np.ndarray, what: str = "test") -> None:
    if np.std(np.concatenate([sx, sy])) == 0:
        raise InvalidInput(f"{what}: every target has the same association s(w): d is undefined (0/0)")


def unit_rows(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def association(W: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """s(w, A, B) for every row w of W.

    mean_a cos(w, a) = w/|w| . mean_a a/|a|: one product with the difference of the mean
    unit attribute vectors instead of a |W| x (|A| + |B|) table of cosines."""
    return unit_rows(W) @ (unit_rows(A).mean(axis=0) - unit_rows(B).mean(axis=0))


def test_statistic(sx: np.ndarray, sy: np.ndarray) -> float:
    return float(np.sum(sx) - np.sum(sy))


def effect_size(sx: np.ndarray, sy: np.ndarray, ddof: int = 1) -> float:
    """Caliskan's d; ddof=1 as Caliskan et al. and May et al. (WEFE uses ddof=0)."""
    pooled = np.concatenate([sx, sy])
    return float((np.mean(sx) - np.mean(sy)) / np.std(pooled, ddof=ddof))


def group_ids(x_words: list, y_words: list) -> tuple[np.ndarray, int]:
    """A group id per item (X's items first) for the words they belong to, and how many
    words X has: X's words are 0..n-1, Y's the rest (a word in both sets is two groups)."""
    xs, ys = list(dict.fromkeys(x_words)), list(dict.fromkeys(y_words))
    ids = {("x", w): i for i, w in enumerate(xs)} | {("y", w): len(xs) + i for i, w in enumerate(ys)}
    return np.array([ids[("x", w)] for w in x_words] + [ids[("y", w)] for w in y_words], dtype=np.int64), len(xs)
