"""Centring embeddings before cosines: a pure function over arrays.

Text embeddings share a large common mean vector (and a few dominant directions) that raise
every cosine alike (Mu & Viswanath 2018, "All-but-the-Top: Simple and Effective
Postprocessing for Word Representations", ICLR; Ethayarajh 2019 on anisotropy). WEAT's
cosines are not invariant to a translation, so that common part moves d.

    mean:  v' = v - mu,                                   mu = mean of the reference rows
    abtt:  v' = (v - mu) - sum_{i<=K} (u_i . (v - mu)) u_i    u_i = the top K principal
           directions of the centred reference (Mu & Viswanath 2018, Algorithm 1)

The reference is a set of vectors the caller names (a stimulus set, or the test's own
X u Y u A u B); the same mu and u_i are applied to every set of the test.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError, UsageError

METHODS = ("mean", "abtt")


def center(vectors: np.ndarray, reference: np.ndarray, method: str = "mean", k: int | None = None) -> np.ndarray:
    """`vectors` (n x dim) with the reference's mean removed, and for method="abtt" also the
    reference's top `k` principal directions (Mu & Viswanath 2018, Algorithm 1: D = dim/100
    by their heuristic; here k must be given). Rows that are NaN (no vector) stay NaN."""
    if method not in METHODS:
        raise UsageError(f"centring method must be mean or abtt, not {method!r}")
    vectors = np.asarray(vectors, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    reference = reference[np.isfinite(reference).all(axis=1)]
    if reference.ndim != 2 or len(reference) == 0:
        raise InputError("centring reference has no vector")
    if reference.shape[1] != vectors.shape[1]:
        raise InputError(f"centring reference has dimension {reference.shape[1]}, the vectors {vectors.shape[1]}")
    mu = reference.mean(axis=0)
    out = vectors - mu
    if method == "mean":
        if k not in (None, 0):
            raise UsageError("centring method mean takes no k (did you mean abtt:K?)")
        return out
    if k is None or int(k) < 1:
        raise UsageError(f"centring method abtt needs k >= 1 (abtt:K), not {k!r}")
    k = int(k)
    if k >= min(reference.shape):
        raise InputError(f"centring abtt:{k}: the reference has {len(reference)} vectors of dimension "
                         f"{reference.shape[1]}: k must be below both")
    # principal directions of the centred reference: its top right singular vectors
    _, _, vt = np.linalg.svd(reference - mu, full_matrices=False)
    top = vt[:k]
    return out - (out @ top.T) @ top


def parse_method(text: str) -> tuple[str, int | None]:
    """`mean` or `abtt:K` (the CLI's --center value) -> (method, k)."""
    method, _, k = str(text).partition(":")
    if method == "mean" and not k:
        return "mean", None
    if method == "abtt" and k.isdigit() and int(k) >= 1:
        return "abtt", int(k)
    raise UsageError(f"--center must be mean or abtt:K (K a whole number >= 1), not {text!r}")
