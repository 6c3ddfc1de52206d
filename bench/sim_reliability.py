"""Coverage of the reliability intervals of stats.reliability on simulated tables with a known
population value (prints its figures; docs/methods/reliability.md quotes them).

- ICC(2,1), ICC(2,k), ICC(3,1): subjects ~ N(0, s2), raters' offsets ~ N(0, r2), noise ~ N(0, e2);
  ICC(2,1) = s2 / (s2 + r2 + e2), ICC(2,k) = s2 / (s2 + (r2 + e2) / k), ICC(3,1) = s2 / (s2 + e2).
- Cronbach's alpha and split-half (Spearman-Brown): k parallel items (true score ~ N(0, 1) plus
  noise ~ N(0, e2)): both estimate k rho / (1 + (k - 1) rho), rho = 1 / (1 + e2).

    PYTHONPATH=. python bench/sim_reliability.py [--reps 1000] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np

from stimkit.stats import reliability as R


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"coverage of 95% intervals over {args.reps} tables a row")
    for n, k, s2, r2, e2 in ((10, 5, 1.0, 0.3, 1.0), (30, 10, 1.0, 0.3, 1.0), (20, 3, 0.5, 0.1, 1.0), (50, 20, 0.2, 0.5, 1.0)):
        truth = {"ICC2": s2 / (s2 + r2 + e2), "ICC2k": s2 / (s2 + (r2 + e2) / k), "ICC3": s2 / (s2 + e2)}
        hits = dict.fromkeys(truth, 0)
        for _ in range(args.reps):
            x = rng.normal(0, np.sqrt(s2), (n, 1)) + rng.normal(0, np.sqrt(r2), (1, k)) + rng.normal(0, np.sqrt(e2), (n, k))
            for kind in truth:
                fit = R.icc(x, kind)
                hits[kind] += fit.ci_low <= truth[kind] <= fit.ci_high
        print(f"  {n} subjects x {k} raters (subject var {s2}, rater {r2}, noise {e2}): "
              + ", ".join(f"{kind} {100 * h / args.reps:.1f}%" for kind, h in hits.items()))
    for n, k, e2 in ((16, 8, 1.0), (16, 16, 4.0), (40, 8, 2.0), (8, 12, 1.0)):
        rho = 1 / (1 + e2)
        truth = k * rho / (1 + (k - 1) * rho)
        hits, widths, split_w = {"alpha": 0, "split-half": 0}, [], []
        for _ in range(args.reps):
            x = rng.normal(0, 1, (n, 1)) + rng.normal(0, np.sqrt(e2), (n, k))
            a, sh = R.cronbach_alpha(x), R.split_half_items(x, rng)
            hits["alpha"] += a.ci_low <= truth <= a.ci_high
            hits["split-half"] += sh.ci_low <= truth <= sh.ci_high
            widths.append(a.ci_high - a.ci_low)
            split_w.append(sh.ci_high - sh.ci_low)
        print(f"  {n} observations x {k} parallel items (reliability {truth:.3f}): alpha {100 * hits['alpha'] / args.reps:.1f}% "
              f"(median width {np.median(widths):.3f}), split-half {100 * hits['split-half'] / args.reps:.1f}% "
              f"(median width {np.median(split_w):.3f})")


if __name__ == "__main__":
    main()
