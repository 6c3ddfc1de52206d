"""Template-audit statistics (pure): the test on subsets of the target sentences (each
word's influence: stats.influence)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..seeding import rng_for
from .pvalues import permutation_p
from .weat import effect_size

MIN_PER_TARGET = 3  # below this d is degenerate (one sentence a side always gives d = +-sqrt(2))


@dataclass(frozen=True)
class Cell:
    """One test on a subset of the target sentences."""
    n_x: int
    n_y: int
    d: float | None
    p: float | None
    p_method: str | None
    note: str | None = None


def d_variance(d, n1, n2):
    """Large-sample variance of a standardised mean difference (Hedges & Olkin 1985):
    (n1 + n2) / (n1 n2) + d^2 / (2 (n1 + n2)); a template's d alone is drawn with its 95% CI."""
    d, n1, n2 = (np.asarray(a, dtype=float) for a in (d, n1, n2))
    return (n1 + n2) / (n1 * n2) + d ** 2 / (2 * (n1 + n2))


def _cut(values: np.ndarray, size: int, rng) -> np.ndarray:
    if len(values) == size:
        return values
    return values[np.sort(rng.choice(len(values), size=size, replace=False))]


def subset_test(sx: np.ndarray, sy: np.ndarray, alternative: str, budget: int, rng) -> Cell:
    """d and p on given target scores; unequal targets are cut to the smaller at random (seeded)."""
    if len(sx) == 0 or len(sy) == 0:
        return Cell(len(sx), len(sy), None, None, None, "template not used by both targets")
    n = min(len(sx), len(sy))
    if n < MIN_PER_TARGET:
        return Cell(len(sx), len(sy), None, None, None, f"fewer than {MIN_PER_TARGET} sentences in a target")
    sx, sy = _cut(sx, n, rng), _cut(sy, n, rng)
    if np.std(np.concatenate([sx, sy])) == 0:
        return Cell(n, n, None, None, None, "no spread in the scores: d undefined")
    pv = permutation_p(np.concatenate([sx, sy]), n, alternative, "auto", budget, rng)
    return Cell(n, n, effect_size(sx, sy), pv.p, pv.method)


def template_cells(s_x, s_y, t_x, t_y, alternative, budget, seed, key) -> dict[str, list[tuple[str, Cell]]]:
    """Per template text: the test on that template alone and without it."""
    templates = sorted(set(t_x) | set(t_y))
    out = {"alone": [], "left_out": []}
    for t in templates:
        rng = rng_for(seed, *key, "alone", t)
        out["alone"].append((t, subset_test(s_x[t_x == t], s_y[t_y == t], alternative, budget, rng)))
        rng = rng_for(seed, *key, "left_out", t)
        out["left_out"].append((t, subset_test(s_x[t_x != t], s_y[t_y != t], alternative, budget, rng)))
    return out
