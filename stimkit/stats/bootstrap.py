"""Bootstrap interval of d (resampling targets and attributes), kept for comparison with
the interval of stats.intervals."""

from __future__ import annotations

import numpy as np

from .weat import effect_size


def bootstrap_d(sim_a: np.ndarray, sim_b: np.ndarray, nx: int, reps: int, rng: np.random.Generator,
                level: float = 0.95, ddof: int = 1, groups: np.ndarray | None = None) -> tuple[float, float]:
    """Percentile CI for d, resampling X, Y, A and B each with replacement.

    sim_a, sim_b: cosine similarities of the targets (X rows first) with A and with B.
    groups: resample whole words of X and Y (with all their sentences) instead of items."""
    N, na, nb = sim_a.shape[0], sim_a.shape[1], sim_b.shape[1]
    # bootstrap counts of each attribute are multinomial: one vectorised draw for all replicates
    wa = rng.multinomial(na, np.full(na, 1 / na), size=reps).T / na
    wb = rng.multinomial(nb, np.full(nb, 1 / nb), size=reps).T / nb
    s = sim_a @ wa - sim_b @ wb                   # (N, reps): s(w) under resampled attributes
    x_items, y_items = np.arange(nx), np.arange(nx, N)
    ds = np.empty(reps)
    for r in range(reps):
        if groups is None:
            xi, yi = rng.choice(x_items, nx), rng.choice(y_items, N - nx)
        else:
            xi, yi = _resample_groups(groups[:nx], rng), _resample_groups(groups[nx:], rng) + nx
        ds[r] = effect_size(s[xi, r], s[yi, r], ddof)
    lo, hi = np.nanquantile(ds, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _resample_groups(groups: np.ndarray, rng) -> np.ndarray:
    ids = np.unique(groups)
    picked = rng.choice(ids, len(ids))
    members = {g: np.flatnonzero(groups == g) for g in ids}
    return np.concatenate([members[g] for g in picked])
