"""CEAT's combined effect size (Guo & Caliskan 2021, "Detecting Emergent Intersectional Biases").

A contextual encoder gives a word a vector per context. CEAT draws, N times, one context's
vector for every word of X, Y, A and B, computes the WEAT effect size d_i of the draw and its
"variance" v_i, which CEAT takes as the sample variance (ddof 1) of s(w, A, B) over X u Y, and
pools the N effect sizes with a random-effects model (DerSimonian-Laird):

    w_i = 1 / v_i,  Q = sum w_i d_i^2 - (sum w_i d_i)^2 / sum w_i,  df = N - 1
    tau^2 = (Q - df) / (sum w_i - sum w_i^2 / sum w_i) if Q > df else 0
    w*_i = 1 / (v_i + tau^2),  CES = sum w*_i d_i / sum w*_i,  V = 1 / sum w*_i
    z = CES / sqrt(V),  p = 1 - Phi(z)   (one-sided, as CEAT's code)

The draws: for each of the N samples, one index per word, uniform over its contexts, taken in
the order X, Y, A, B and each list's word order (CEAT's own order, so the same stream of
integers gives the same draws). Checked against CEAT's published code on the same vectors
(tests/fixtures/ceat/SOURCE.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from .weat import InvalidInput, association


@dataclass(frozen=True)
class CombinedEffect:
    ces: float              # the combined effect size
    variance: float         # V = 1 / sum w*
    p: float                # one-sided, 1 - Phi(CES / sqrt(V))
    tau2: float             # between-sample variance (DerSimonian-Laird)
    q: float
    n_samples: int
    effects: np.ndarray     # the N sampled effect sizes
    variances: np.ndarray   # and their variances (CEAT's v_i)


def pool(effects, variances) -> CombinedEffect:
    """The random-effects pooling of sampled effect sizes with their variances (module docstring)."""
    e, v = np.asarray(effects, float), np.asarray(variances, float)
    if e.size < 2 or e.shape != v.shape:
        raise InvalidInput("CEAT pools at least two sampled effect sizes, each with a variance")
    if not (v > 0).all():
        raise InvalidInput("a sampled effect size has no variance (every s(w) equal): CEAT cannot weight it")
    w = 1 / v
    q = float(np.sum(w * e ** 2) - np.sum(e * w) ** 2 / np.sum(w))
    df = e.size - 1
    tau2 = float((q - df) / (np.sum(w) - np.sum(w ** 2) / np.sum(w))) if q > df else 0.0
    w_star = 1 / (v + tau2)
    ces = float(np.sum(w_star * e) / np.sum(w_star))
    var = float(1 / np.sum(w_star))
    return CombinedEffect(ces, var, float(norm.sf(ces / np.sqrt(var))), tau2, q, int(e.size), e, v)


def sample_effect(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray) -> tuple[float, float]:
    """One draw's effect size (ddof 1) and CEAT's variance of it: the variance of s over X u Y."""
    s = association(np.concatenate([X, Y]), A, B)
    sd = np.std(s, ddof=1)
    return float((s[: len(X)].mean() - s[len(X):].mean()) / sd), float(sd ** 2)


def combined_effect_size(vectors: list[list[np.ndarray]], n_samples: int, rng, what: str = "CEAT") -> CombinedEffect:
    """CEAT on per-word context vectors: `vectors` is [X, Y, A, B], each a list (one per word, in
    the list's order) of arrays (contexts x dim). `rng`: a numpy Generator, or a RandomState (the
    stream CEAT's code draws from, np.random.randint).

    Every word with one context is refused: the N draws are then one draw repeated, and pooling
    them as N studies gives a variance N times too small and a p near 0 for any d."""
    draw = rng.integers if hasattr(rng, "integers") else rng.randint
    if n_samples < 2:
        raise InvalidInput("CEAT needs at least two samples")
    for role, words in zip("XYAB", vectors):
        if not words:
            raise InvalidInput(f"{what}: set {role} has no word with a context")
    if all(len(w) == 1 for words in vectors for w in words):
        raise InvalidInput(f"{what}: every word has one context, so CEAT's {n_samples} draws are one draw repeated "
                           "and its p would pool them as independent studies: give the words several contexts "
                           "(e.g. `import corpus -n`), or read the test's own d and p")
    e, v = np.empty(n_samples), np.empty(n_samples)
    for i in range(n_samples):
        picked = [np.array([w[draw(0, len(w))] for w in words]) for words in vectors]
        e[i], v[i] = sample_effect(*picked)
    return pool(e, v)
