"""Seeds derived from the run seed and a test's identity, so no result depends on run order."""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(seed: int, *parts: object) -> int:
    h = hashlib.sha256(repr((int(seed),) + tuple(str(p) for p in parts)).encode()).digest()
    return int.from_bytes(h[:8], "little")


def rng_for(seed: int, *parts: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, *parts))
