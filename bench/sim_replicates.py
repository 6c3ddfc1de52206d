"""Does stats.replicates.variance_split recover known components, and do the replicate
components' intervals cover? Prints its figures (docs/methods/reliability.md quotes them).

1. Which replicate component moves d: D_r = mean_X s - mean_Y s in each replicate, with
   only the replicate main effect, then only group x replicate, switched on.
2. 500 designs with known components, drawn at random (sizes, balance, components), each
   fitted with every interval method: bias of each component, coverage of the group x
   replicate and replicate intervals (nominal 95%; Monte Carlo SE ~1 point at 500).
3. The same per fixed configuration (word test; sentence test balanced and with cells cut).

    PYTHONPATH=. python bench/sim_replicates.py [--designs 500] [--seed 0]
    PYTHONPATH=. python bench/sim_replicates.py --recheck 1500 --seed 123   (bias only, one design)
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from stimkit.stats import replicates as RP

SENTENCE = ("words", "templates", "group_template", "word_template", "replicates", "group_replicate",
            "word_replicate", "residual")
WORD = ("words", "replicates", "group_replicate", "residual")


def simulate(rng, nx, ny, T, R, var, cut=0.0, diff=0.3):
    """Long table (s, replicate, is_x, word, template) of one design: nx + ny words, T templates
    (0: a word test), R replicates, a share `cut` of the word x template cells left out (the
    same in every replicate), the components in `var`."""
    sd = {k: np.sqrt(v) for k, v in var.items()}
    W = nx + ny
    g = np.r_[np.ones(nx, int), np.zeros(ny, int)]
    u = rng.normal(0, sd["words"], W)
    a = rng.normal(0, sd["replicates"], R)
    h = rng.normal(0, sd["group_replicate"], (2, R))
    if T == 0:
        w, r = np.meshgrid(np.arange(W), np.arange(R), indexing="ij")
        s = diff * g[w] + u[w] + a[r] + h[g[w], r] + rng.normal(0, sd["residual"], w.shape)
        return s.ravel(), r.ravel(), (g[w] == 1).ravel(), w.ravel(), None
    v = rng.normal(0, sd["templates"], T)
    c = rng.normal(0, sd["group_template"], (2, T))
    b = rng.normal(0, sd["word_template"], (W, T))
    m = rng.normal(0, sd["word_replicate"], (W, R))
    keep = rng.random((W, T)) >= cut
    keep[:, :2] = True     # every word in two templates at least, and both groups in each
    cw, ct = np.nonzero(keep)
    w, r = np.repeat(cw, R), np.tile(np.arange(R), len(cw))
    t = np.repeat(ct, R)
    gg = g[w]
    s = (diff * gg + u[w] + v[t] + c[gg, t] + b[w, t] + a[r] + h[gg, r] + m[w, r]
         + rng.normal(0, sd["residual"], len(w)))
    return s, r, gg == 1, w, t


def moves_d(rng, reps=2000):
    """The SD of D over replicates (same words and templates) with one replicate component on
    (the root of the mean variance over 50 families)."""
    base = dict(words=1.0, templates=0.5, group_template=0.2, word_template=0.5, replicates=0.0,
                group_replicate=0.0, word_replicate=0.0, residual=0.0)
    print("1. which replicate component moves d (SD of D = mean_X s - mean_Y s over 40 replicates, 8+8 x 5)")
    for name in ("replicates", "group_replicate", "word_replicate"):
        var = {**base, name: 0.25}
        sds = []
        for _ in range(reps // 40):
            s, r, x, w, t = simulate(np.random.default_rng(rng.integers(2 ** 32)), 8, 8, 5, 40, var)
            D = [s[(r == k) & x].mean() - s[(r == k) & ~x].mean() for k in range(40)]
            sds.append(np.var(D, ddof=1))
        expect = {"replicates": 0.0, "group_replicate": np.sqrt(2 * 0.25), "word_replicate": np.sqrt(2 * 0.25 / 8)}[name]
        print(f"   {name:16s} var 0.25: SD(D) = {np.sqrt(np.mean(sds)):.3f} (model: {expect:.3f})")


def random_design(rng):
    """Sizes and components drawn for one design of section 2."""
    word_test = rng.random() < 0.3
    nx = int(rng.integers(5, 16))
    ny = nx if rng.random() < 0.6 else int(rng.integers(5, 16))
    T = 0 if word_test else int(rng.integers(3, 9))
    R = int(rng.choice([5, 10, 20, 30]))
    cut = 0.0 if word_test or rng.random() < 0.5 else 0.2
    var = {k: float(rng.uniform(0.05, 1.0)) for k in SENTENCE}
    var["group_replicate"] = float(rng.choice([0.01, 0.05, 0.2, 0.5]))
    return dict(nx=nx, ny=ny, T=T, R=R, cut=cut, var=var)


def run(designs, rng, fixed=None):
    methods = RP.INTERVALS
    hits = {m: {"replicates": 0, "group_replicate": 0} for m in methods}
    width = {m: [] for m in methods}
    est = {k: [] for k in SENTENCE}
    raw = {k: [] for k in SENTENCE}
    truth = {k: [] for k in SENTENCE}
    t0 = time.time()
    for _ in range(designs):
        spec = fixed or random_design(rng)
        sim_rng = np.random.default_rng(rng.integers(2 ** 32))
        s, r, x, w, t = simulate(sim_rng, spec["nx"], spec["ny"], spec["T"], spec["R"], spec["var"], spec["cut"])
        word_test = spec["T"] == 0
        true = dict(spec["var"])
        if word_test:   # no templates: word x template and word x replicate are the word's own residual
            true = {k: true[k] for k in WORD}
        for m in methods:
            fit = RP.variance_split(s, r, x, w, t, method=m, rng=np.random.default_rng(1))
            for k in ("replicates", "group_replicate"):
                lo, hi = fit.intervals[k]
                hits[m][k] += lo <= true[k] <= hi
            width[m].append(fit.intervals["group_replicate"][1] - fit.intervals["group_replicate"][0])
        Y, xs, ws, ts, _ = RP._table(s, r, x, list(w), t, "bench")
        sp, _ = RP._split(Y, xs, ws, ts, "bench")
        raw_fit = dict(zip(sp.names, np.linalg.solve(sp.K, sp.ms)))    # before negatives are set to 0
        for k in true:
            est[k].append(fit.detail[k])
            raw[k].append(raw_fit[k])
            truth[k].append(true[k])
    secs = time.time() - t0
    print(f"   {designs} designs, {secs:.0f} s ({1000 * secs / designs / len(methods):.0f} ms a fit)")
    print("   bias of each component: mean estimate - truth +- its Monte Carlo SE, as solved, then with negatives set to 0:")
    for k in SENTENCE:
        if est[k]:
            e, f = np.array(raw[k]) - np.array(truth[k]), np.array(est[k]) - np.array(truth[k])
            se = lambda v: v.std(ddof=1) / np.sqrt(len(v))  # noqa: E731
            print(f"     {k:16s} {e.mean():+.4f} +- {se(e):.4f}   clipped {f.mean():+.4f} +- {se(f):.4f}  "
                  f"(truth mean {np.mean(truth[k]):.3f}, n {len(e)})")
    print("   coverage of the 95% intervals (group x replicate: moves d; replicates: main effect):")
    for m in methods:
        print(f"     {m:14s} group_replicate {100 * hits[m]['group_replicate'] / designs:5.1f}%   "
              f"replicates {100 * hits[m]['replicates'] / designs:5.1f}%   "
              f"median width (group_replicate) {np.nanmedian(width[m]):.3f}")


def recheck(designs, seed):
    """Bias only (components as solved), on the unbalanced sentence design of section 3, with
    fresh draws: a second look at a bias that section 3 flags."""
    v = dict(words=1.0, templates=0.5, group_template=0.2, word_template=0.5, replicates=0.3,
             group_replicate=0.1, word_replicate=0.2, residual=0.4)
    rng = np.random.default_rng(seed)
    raw = []
    for _ in range(designs):
        s, r, x, w, t = simulate(np.random.default_rng(rng.integers(2 ** 32)), 10, 6, 6, 20, v, 0.2)
        Y, xs, ws, ts, _ = RP._table(s, r, x, list(w), t, "bench")
        sp, _ = RP._split(Y, xs, ws, ts, "bench")
        raw.append(np.linalg.solve(sp.K, sp.ms))
    raw = np.array(raw)
    print(f"recheck: 10+6 x 6 templates x 20 replicates, 20% of cells cut, {designs} designs, seed {seed}: "
          "mean estimate as solved - truth +- its Monte Carlo SE")
    for k, m, e in zip(sp.names, raw.mean(axis=0), raw.std(axis=0, ddof=1) / np.sqrt(designs)):
        print(f"   {k:16s} {m - v[k]:+.4f} +- {e:.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--designs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--recheck", type=int, default=0, help="only the bias recheck, over this many designs")
    args = ap.parse_args()
    if args.recheck:
        return recheck(args.recheck, args.seed)
    rng = np.random.default_rng(args.seed)
    moves_d(rng)
    print(f"\n2. {args.designs} random designs (30% word tests; 5-15 words a side, equal in 60%; 3-8 templates; "
          "5-30 replicates; cells cut in half the sentence tests; components U(0.05, 1), group x replicate "
          "0.01-0.5)")
    run(args.designs, rng)
    v = dict(words=1.0, templates=0.5, group_template=0.2, word_template=0.5, replicates=0.3,
             group_replicate=0.1, word_replicate=0.2, residual=0.4)
    for label, spec in (("word test 8+8 x 10 replicates", dict(nx=8, ny=8, T=0, R=10, cut=0.0, var=v)),
                        ("sentence test 8+8 x 5 templates x 10 replicates", dict(nx=8, ny=8, T=5, R=10, cut=0.0, var=v)),
                        ("sentence test 10+6 x 6 templates x 20 replicates, 20% of cells cut",
                         dict(nx=10, ny=6, T=6, R=20, cut=0.2, var=v))):
        print(f"\n3. {label}, components {v}")
        run(args.designs, rng, spec)


if __name__ == "__main__":
    main()
