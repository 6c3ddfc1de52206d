"""Level of the difference test for two effect sizes (stimkit.stats.difference) under a
null of equal population d, and its power against one planted difference.

    python bench/bench_difference.py [--reps 1000]

Pairs of results, attributes fixed, drawn from the model of stimkit/stats/intervals.py
(s(w) normal within X and Y, SD 1 over stimuli), population d set equal in both results:
  independent      two tests on different words (no shared unit)
  two encoders     one test, the same words, s1(w) and s2(w) correlated 0.7 per word
  word/sentence    a word test and its sentence test over the same words: 4 sentences per
                   word, s = u_word + e (within-word correlation 0.5), u_word correlated 0.7
                   with the word test's s(w); the population d is Caliskan's at each
                   design's sizes (16 or 48 words, 64 or 192 sentences)
Rejection rate of d1 = d2 at alpha 0.05 and 0.01 (target: at most alpha, up to Monte Carlo
error: +-1.4 and +-0.6 points at 1,000 replications), and the power at d1 = 1.5 vs d2 = 0.5.

Measured (1,000 replications per row, 25 s of one core): under the null, 1.4-5.3% rejected
at alpha 0.05 and 0.0-1.7% at 0.01 (conservative at 8+8 with shared words and at d 1.5;
1.6-1.7% at 0.01 for independent results at d 0, a little above the level); power at
d 1.5 vs 0.5: 38% (8+8 independent) to 100% (24+24).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np

from stimkit.stats.difference import difference_test
from stimkit.stats.intervals import cohen_from_caliskan

RHO, ICC, PER_WORD = 0.7, 0.5, 4


def pair(rng, scenario, n, d1, d2):
    """(sx1, sy1, units1, sx2, sy2, units2) for one replication."""
    lab = np.arange(2 * n)
    is_x = np.r_[np.ones(n), np.zeros(n)]
    delta1 = float(cohen_from_caliskan(d1, n, n))
    z1 = rng.normal(size=2 * n)
    s1 = z1 + delta1 * is_x
    if scenario == "independent":
        delta2 = float(cohen_from_caliskan(d2, n, n))
        s2 = rng.normal(size=2 * n) + delta2 * is_x
        return s1[:n], s1[n:], None, s2[:n], s2[n:], None
    z2 = RHO * z1 + np.sqrt(1 - RHO ** 2) * rng.normal(size=2 * n)
    if scenario == "two encoders":
        delta2 = float(cohen_from_caliskan(d2, n, n))
        s2 = z2 + delta2 * is_x
        return s1[:n], s1[n:], lab, s2[:n], s2[n:], lab
    words = np.repeat(lab, PER_WORD)
    delta2 = float(cohen_from_caliskan(d2, n * PER_WORD, n * PER_WORD))
    s2 = np.sqrt(ICC) * z2[words] + np.sqrt(1 - ICC) * rng.normal(size=words.size) + delta2 * is_x[words]
    k = n * PER_WORD
    return s1[:n], s1[n:], lab, s2[:k], s2[k:], words


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    a = ap.parse_args()
    started = time.perf_counter()
    print(f"{'scenario':<15}{'words':>7}{'d1':>6}{'d2':>6}{'reject@.05':>12}{'reject@.01':>12}{'mean se':>9}")
    seed = 0
    for scenario in ("independent", "two encoders", "word/sentence"):
        for n in (8, 24):
            for d1, d2 in ((0.0, 0.0), (0.5, 0.5), (1.5, 1.5), (1.5, 0.5)):
                seed += 1
                rng = np.random.default_rng(seed)
                ps, ses = np.empty(a.reps), np.empty(a.reps)
                for r in range(a.reps):
                    sx1, sy1, u1, sx2, sy2, u2 = pair(rng, scenario, n, d1, d2)
                    res = difference_test(sx1, sy1, sx2, sy2, u1, u2)
                    ps[r], ses[r] = res.p, res.se
                what = "power" if d1 != d2 else ""
                print(f"{scenario:<15}{f'{n}+{n}':>7}{d1:>6}{d2:>6}{(ps <= .05).mean() * 100:>11.1f}%"
                      f"{(ps <= .01).mean() * 100:>11.1f}%{ses.mean():>9.3f}  {what}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
