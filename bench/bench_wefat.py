"""WEFAT statistics speed on random vectors (no store, no encoder): the per-word
permutation p-values dominate.

    python bench/bench_wefat.py

Cases: 50 words against 8+8 attribute words (the paper's size: exact, C(16, 8) = 12,870
splits per word), against 50+50 (sampled, 100,000 splits per word), and in sentence
context (8 sentences per target word, 16 attribute words x 7 sentences, whole words move).
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np

from stimkit.run import wefat


def case(label, n_words, per_word, n_a, n_b, per_attr, dim=300):
    rng = np.random.default_rng(0)
    T = rng.normal(size=(n_words * per_word, dim))
    A, B = rng.normal(size=(n_a * per_attr, dim)), rng.normal(size=(n_b * per_attr, dim))
    word_of = np.repeat(np.arange(n_words), per_word)
    groups = np.repeat(np.arange(n_a + n_b), per_attr) if per_attr > 1 else None
    rngs = [np.random.default_rng(i) for i in range(n_words)]
    started = time.perf_counter()
    v = wefat.normalized_cosines(T, A, B, word_of)
    s = wefat.association_of(v, len(A))
    pv = wefat.word_p_values(v, len(A), rngs, attr_groups=groups, n_groups_a=n_a)
    wefat.regression(s, rng.normal(size=n_words))
    seconds = time.perf_counter() - started
    print(f"{label:<48} {pv[0].method:<18} {pv[0].samples:>7} splits/word  {seconds * 1000:8.1f} ms "
          f"({seconds / n_words * 1000:.2f} ms/word)")


if __name__ == "__main__":
    case("50 words, 8+8 attribute words", 50, 1, 8, 8, 1)
    case("50 words, 50+50 attribute words", 50, 1, 50, 50, 1)
    case("50 words x 8 sentences, 8+8 words x 7 sentences", 50, 8, 8, 8, 7)
