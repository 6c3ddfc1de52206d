"""The crossed fit and the influence columns at 2,000 and 20,000 sentences: time and growth.

    python bench/bench_speed.py [--repeats 3]

A HolisticBias-scale sentence test, simulated: X and Y words (60 at 2,000 sentences, 600
at 20,000), each in about 33 of 900 templates, s(w) with word, template and sentence effects;
for influence, 50-d unit vectors whose cosines with 8 + 8 attribute sentences (four words a
side) give those s(w). Prints the best of --repeats wall times of `stats.crossed.crossed_fit`
(the default anova-gpq) and `stats.influence.word_influence` (with p, as a run computes it:
auto at budget 100,000, 10,000 draws near alpha 0.01), and the growth from 2,000 to 20,000
(10 would be linear). The templates' system is 900 x 900 at both sizes, so the crossed fit
grows less than linearly here.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

from stimkit.stats.crossed import crossed_fit  # noqa: E402
from stimkit.stats.influence import word_influence  # noqa: E402

TEMPLATES = 900


def design(n_sentences: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    words = max(4, round(n_sentences / 33))
    w = np.repeat(np.arange(words), -(-n_sentences // words))[:n_sentences]
    is_x = w < words // 2
    order = np.argsort(~is_x, kind="stable")      # X's sentences first
    w, is_x = w[order], is_x[order]
    t = rng.integers(0, TEMPLATES, n_sentences)
    s = 0.02 * is_x + rng.normal(0, 0.02, words)[w] + rng.normal(0, 0.01, TEMPLATES)[t] + rng.normal(0, 0.05, n_sentences)
    return s, is_x, w, t


def vectors(s: np.ndarray, rng: np.random.Generator, dim: int = 50, k: int = 8):
    """Target unit vectors and 2k attribute unit vectors whose association is about s."""
    a = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    A = a[:k] + 0.3 * rng.normal(size=(k, dim)) / np.sqrt(dim)
    B = a[k:2 * k] + 0.3 * rng.normal(size=(k, dim)) / np.sqrt(dim)
    A, B = (M / np.linalg.norm(M, axis=1, keepdims=True) for M in (A, B))
    T = rng.normal(size=(len(s), dim)) / np.sqrt(dim) + s[:, None] * (A.mean(0) - B.mean(0)) * 4
    T /= np.linalg.norm(T, axis=1, keepdims=True)
    return T @ A.T, T @ B.T


def best(f, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        f()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; best of {repeats}")
    found = {}
    for n in (2_000, 20_000):
        s, is_x, w, t = design(n)
        words_x = [f"w{i}" for i in w[is_x]]
        words_y = [f"w{i}" for i in w[~is_x]]
        sim_a, sim_b = vectors(s, np.random.default_rng(1))
        attr = [f"a{i // 2}" for i in range(8)]
        crossed = best(lambda: crossed_fit(s, is_x, w, t), repeats)
        influence = best(lambda: word_influence(sim_a, sim_b, int(is_x.sum()), words_x, words_y, attr, attr,
                                                alternative="greater", budget=100_000, sample_budget=10_000,
                                                rng=np.random.default_rng(2), alpha=0.01), repeats)
        found[n] = (crossed, influence)
        print(f"{n:>6} sentences, {len(set(w)):>3} words, {len(set(t))} templates: crossed fit {crossed:6.2f} s, "
              f"influence (d and p of every word) {influence:6.2f} s")
    (c1, i1), (c2, i2) = found[2_000], found[20_000]
    print(f"growth 2,000 -> 20,000 sentences (linear: 10x): crossed fit {c2 / c1:.1f}x, influence {i2 / i1:.1f}x")


if __name__ == "__main__":
    main()
