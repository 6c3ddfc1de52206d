"""Coverage and false-positive rate of the crossed words x templates estimate (stats.crossed).

    python bench/bench_crossed.py [--reps 1000] [--other-reps 500] [--mixed-reps 200]
                                  [--gt-reps 500] [--attr-reps 500] [--only SECTION ...]

The population (stats/crossed.py's model): per sentence of target word w (group X or Y) in
template t,
    s = Delta g + u_w + v_t + c_gt + e_wt,   u ~ N(0, 1), v ~ N(0, 0.5^2),
    c ~ N(0, sd_gt^2) (0.3 unless the cell says 0 or 0.8), e ~ N(0, 0.7^2),
words and templates drawn afresh in each replication. The population d is
caliskan_from_cohen(delta, N_x, N_y) with delta = Delta / sigma, sigma^2 the sum of the four
variances, and the replication's sentence counts; delta is 0 (no effect), 0.8 or 1.5.

Designs:
  balanced     every word in every template (n+n words x T templates).
  unbalanced   as real template sets: each word has a kind, all T templates (p 0.5), the
               first ceil(0.6 T) (0.3) or the first 3 (0.2), as count nouns, names and
               adjectives have 14, 8 and 3; then balance=cut: random sentences of the larger
               target dropped until the two have as many, and 5% of the cells dropped at random
               (a word may lack a template; every word keeps a sentence).

Per cell: each method's share of 95% intervals that hold the population d, the median
width, and (delta 0) the share of p <= 0.01 one-sided (greater) and two-sided, and the
milliseconds a fit took. Methods (stats/crossed.py): anova-gpq (the default) on every
replication; anova-t computed from that fit's D, SE, df and SD (its definition; checked
against crossed_fit(method="anova-t") on the first replications); gpq-all on the first
`--other-reps`; mixedlm-wald (statsmodels MixedLM, REML; 0.1-1 s a fit) on the first
`--mixed-reps`.

Sections: main (the required cells, delta 0 and 0.8), large (delta 1.5), gt (no and much group
x template variance), attributes (attribute words sampled: random_attributes on and off),
seeds (Monte Carlo error of the interval ends of anova-gpq and of stats.intervals'
gpq-words over 20 seeds, and their time), glove (random GloVe words: the false-positive rate
on real vectors).

Measured (defaults; 2 cores shared with other work, about 50 minutes in all):
  main        anova-gpq holds the population d in 94.3-96.2% of 1,000 replications in every
              cell (balanced and unbalanced, 8+8 x 5 and 24+24 x 10, delta 0 and 0.8); p <= 0.01
              with no effect in 0.7-1.1% (two-sided 0.5-1.2%). anova-t 93.2-95.9%, gpq-all
              94.8-98.0% (500), mixedlm-wald 92.0-96.0% (200) with p <= 0.01 in up to 3.0%.
  large       delta 1.5: anova-gpq 95.0-97.6%, gpq-all 95.2-97.0%, anova-t 91.6-93.6%.
  gt          set x template SD 0: anova-gpq 94.6-96.6%; SD 0.8: 94.6-96.6%; p <= 0.01 0-1.0%.
  attributes  attributes fixed 82.4-91.8% (p <= 0.01 up to 4.0%); sampled 94.4-97.4% (0.6-1.0%).
  seeds       anova-gpq's ends move by at most 0.0007 over 20 seeds, gpq-words' by 0.0001.
  glove       500 draws: p <= 0.01 in 0.8% one- and two-sided; the interval holds 0 in 95.0%.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
from scipy import stats as sps

from stimkit.stats.crossed import crossed_fit
from stimkit.stats.intervals import caliskan_from_cohen, effect_size_ci

SD_WORD, SD_TEMPLATE, SD_WT = 1.0, 0.5, 0.7


def design(kind: str, n: int, T: int, rng):
    """(is_x, word, template) per sentence."""
    words = np.arange(2 * n)
    if kind == "balanced":
        w = np.repeat(words, T)
        t = np.tile(np.arange(T), 2 * n)
        return w < n, w, t
    sizes = rng.choice([T, int(np.ceil(0.6 * T)), 3], size=2 * n, p=[0.5, 0.3, 0.2])
    w = np.repeat(words, sizes)
    t = np.concatenate([np.arange(k) for k in sizes])
    keep = np.ones(len(w), bool)
    keep[rng.random(len(w)) < 0.05] = False
    keep[np.unique(w, return_index=True)[1]] = True           # every word keeps a sentence
    x, y = np.flatnonzero(keep & (w < n)), np.flatnonzero(keep & (w >= n))
    big, small = (x, y) if len(x) > len(y) else (y, x)
    movable = np.setdiff1d(big, big[np.unique(w[big], return_index=True)[1]])
    keep[rng.choice(movable, size=len(big) - len(small), replace=False)] = False
    return (w < n)[keep], w[keep], t[keep]


def population_sd(sd_gt: float) -> float:
    return float(np.sqrt(SD_WORD ** 2 + SD_TEMPLATE ** 2 + sd_gt ** 2 + SD_WT ** 2))


def draw(is_x, w, t, delta, sd_gt, rng):
    n_w, T = int(w.max()) + 1, int(t.max()) + 1
    g = is_x.astype(int)
    u, v = rng.normal(0, SD_WORD, n_w), rng.normal(0, SD_TEMPLATE, T)
    c = rng.normal(0, sd_gt, (2, T))
    e = rng.normal(0, SD_WT, len(w))
    return delta * population_sd(sd_gt) * g + u[w] + v[t] + c[g, t] + e


def two_sided(p_greater: float) -> float:
    """The two-sided p from the one-sided one: P(pivot <= 0) + P(pivot >= 0) = 1 for
    anova-gpq's generalized p and mixedlm-wald's z, so two-sided = 2 min(p, 1 - p), as
    crossed_fit(alternative="two-sided") computes it."""
    return min(1.0, 2 * min(p_greater, 1 - p_greater))


def anova_t(r, level=0.95):
    """anova-t's interval and p from an anova-gpq fit's D, SE, df and SD (crossed.py)."""
    half = sps.t.ppf((1 + level) / 2, r.df) * r.se_diff
    lo, hi = caliskan_from_cohen(np.array([r.diff - half, r.diff + half]) / r.sd, r.n_x, r.n_y)
    t = r.diff / r.se_diff
    return lo, hi, sps.t.sf(t, r.df), 2 * sps.t.sf(abs(t), r.df)


def run_cell(kind, n, T, delta, sd_gt, reps, other_reps, mixed_reps, seed):
    """One cell: `reps` replications of anova-gpq (and anova-t from its fit), the first
    `other_reps` of them also gpq-all, the first `mixed_reps` also mixedlm-wald."""
    rng = np.random.default_rng(seed)
    rows = {m: [] for m in ("anova-gpq", "gpq-all", "anova-t", "mixedlm-wald")}
    seconds = {m: 0.0 for m in rows}
    for i in range(reps):
        is_x, w, t = design(kind, n, T, rng)
        s = draw(is_x, w, t, delta, sd_gt, rng)
        true = float(caliskan_from_cohen(delta, int(is_x.sum()), int((~is_x).sum())))
        for name, todo in (("anova-gpq", reps), ("gpq-all", other_reps), ("mixedlm-wald", mixed_reps)):
            if i < todo:
                t0 = time.perf_counter()
                r = crossed_fit(s, is_x, w, t, method=name, rng=np.random.default_rng(i))
                seconds[name] += time.perf_counter() - t0
                rows[name].append((r.ci_low <= true <= r.ci_high, r.ci_high - r.ci_low, r.p, two_sided(r.p)))
                if name == "anova-gpq":
                    gpq = r
        lo, hi, p1, p2 = anova_t(gpq)
        if i < 3:
            check = crossed_fit(s, is_x, w, t, method="anova-t")
            assert np.allclose([check.ci_low, check.ci_high, check.p], [lo, hi, p1]), "anova-t differs from crossed_fit's"
        rows["anova-t"].append((lo <= true <= hi, hi - lo, p1, p2))
    out = []
    for name, found in rows.items():
        if not found:
            continue
        a = np.array(found, dtype=float)
        fpr = (f"{np.mean(a[:, 2] <= 0.01):6.1%} {np.mean(a[:, 3] <= 0.01):6.1%}" if delta == 0 else f"{'':>6} {'':>6}")
        ms = f"{1000 * seconds[name] / len(found):6.0f}" if seconds[name] else f"{'':>6}"
        out.append(f"{kind:<10} {n:>2}+{n:<2} x {T:<2} d={delta:<3} gt={sd_gt:<3} {name:<13} {len(found):>5} "
                   f"{a[:, 0].mean():7.1%} {np.median(a[:, 1]):6.3f} {fpr}  {ms}")
    return out


HEADER = (f"{'design':<10} {'size':<10} {'effect':<5} {'gt':<6} {'method':<13} {'reps':>5} {'cover':>7} {'width':>6} "
          f"{'p<=.01':>6} {'2-side':>6}  {'ms/fit':>6}")


def section_main(args):
    print("Coverage of the 95% interval and false-positive rate of p (alpha 0.01), group x template SD 0.3")
    print(HEADER)
    k = 0
    for kind in ("balanced", "unbalanced"):
        for n, T in ((8, 5), (24, 10)):
            for delta in (0.0, 0.8):
                k += 1
                for line in run_cell(kind, n, T, delta, 0.3, args.reps, args.other_reps, args.mixed_reps, 1000 + k):
                    print(line, flush=True)


def section_large(args):
    print("\nA large effect (delta 1.5): the SD's uncertainty matters")
    print(HEADER)
    k = 0
    for kind in ("balanced", "unbalanced"):
        for n, T in ((8, 5), (24, 10)):
            k += 1
            for line in run_cell(kind, n, T, 1.5, 0.3, args.gt_reps, args.gt_reps, 0, 1500 + k):
                print(line, flush=True)


def section_gt(args):
    print("\nWithout and with much group x template variance (SD 0 and 0.8), delta 0 and 0.8")
    print(HEADER)
    k = 0
    for sd_gt in (0.0, 0.8):
        for kind in ("balanced", "unbalanced"):
            for n, T in ((8, 5), (24, 10)):
                for delta in (0.0, 0.8):
                    k += 1
                    for line in run_cell(kind, n, T, delta, sd_gt, args.gt_reps, 0, 0, 2000 + k):
                        print(line, flush=True)


def section_attributes(args):
    """Attribute words sampled too: cos(n, a) = kappa_a + h_n + sign_a t_n / 2 + alpha_{a,g}
    + omega_{w,a} + eta_{n,a}, 8 + 8 attribute words (one stimulus each); t_n is the crossed
    target model above, so s = t_n + the attribute terms. sigma^2 adds (SD_omega^2 +
    SD_eta^2)(1/8 + 1/8): the SD of s within a group given the attributes."""
    print("\nAttribute words sampled (SD of group x attribute 0.5, word x attribute 0.5, noise 0.5):"
          " random_attributes on and off")
    print(f"{'size':<10} {'effect':<7} {'random_attributes':<18} {'reps':>5} {'cover':>7} {'width':>6} "
          f"{'p<=.01':>6} {'2-side':>6}")
    n_a = 8
    sd_alpha, sd_omega, sd_eta, sd_gt = 0.5, 0.5, 0.5, 0.3
    for n, T in ((8, 5), (24, 10)):
        for delta in (0.0, 0.8):
            rng = np.random.default_rng(3000 + n + int(10 * delta))
            found = {False: [], True: []}
            for i in range(args.attr_reps):
                is_x, w, t = design("balanced", n, T, rng)
                sigma = np.sqrt(population_sd(sd_gt) ** 2 + (sd_omega ** 2 + sd_eta ** 2) * 2 / n_a)
                target = draw(is_x, w, t, 0.0, sd_gt, rng) + delta * sigma * is_x
                g = is_x.astype(int)
                N = len(w)
                sign = np.r_[np.ones(n_a), -np.ones(n_a)]
                cos = (rng.normal(0, 1, 2 * n_a)[None, :] + rng.normal(0, 1, N)[:, None] + sign * target[:, None] / 2
                       + rng.normal(0, sd_alpha, (2, 2 * n_a))[g] + rng.normal(0, sd_omega, (2 * n, 2 * n_a))[w]
                       + rng.normal(0, sd_eta, (N, 2 * n_a)))
                cos_a, cos_b = cos[:, :n_a], cos[:, n_a:]
                s = cos_a.mean(axis=1) - cos_b.mean(axis=1)
                true = float(caliskan_from_cohen(delta, int(is_x.sum()), int((~is_x).sum())))
                for on in (False, True):
                    kw = dict(random_attributes=True, cos_a=cos_a, cos_b=cos_b) if on else {}
                    r = crossed_fit(s, is_x, w, t, rng=np.random.default_rng(i), **kw)
                    found[on].append((r.ci_low <= true <= r.ci_high, r.ci_high - r.ci_low, r.p, two_sided(r.p)))
            for on, rows in found.items():
                a = np.array(rows, dtype=float)
                fpr = f"{np.mean(a[:, 2] <= 0.01):6.1%} {np.mean(a[:, 3] <= 0.01):6.1%}" if delta == 0 else ""
                print(f"{n:>2}+{n:<2} x {T:<2} d={delta:<5} {str(on):<18} {len(a):>5} {a[:, 0].mean():7.1%} "
                      f"{np.median(a[:, 1]):6.3f} {fpr}", flush=True)


def section_seeds(args):
    """The Monte Carlo error of the two pivot intervals: ends over 20 seeds, on one data set each."""
    print("\nMonte Carlo error: the interval's ends over 20 seeds (same data), and the time per interval")
    rng = np.random.default_rng(7)
    for n, T in ((8, 5), (24, 10)):
        is_x, w, t = design("balanced", n, T, rng)
        s = draw(is_x, w, t, 0.8, 0.3, rng)
        t0 = time.perf_counter()
        ends = np.array([(r.ci_low, r.ci_high, r.p) for r in
                         (crossed_fit(s, is_x, w, t, rng=np.random.default_rng(k)) for k in range(20))])
        ms = (time.perf_counter() - t0) / 20 * 1000
        print(f"  anova-gpq {n}+{n} x {T}: low {ends[:, 0].mean():+.4f} (range {np.ptp(ends[:, 0]):.5f}), "
              f"high {ends[:, 1].mean():+.4f} (range {np.ptp(ends[:, 1]):.5f}), p range {np.ptp(ends[:, 2]):.2g}; "
              f"{ms:.0f} ms an interval", flush=True)
        sx, sy = s[is_x], s[~is_x]
        t0 = time.perf_counter()
        ends = np.array([(iv.low, iv.high) for iv in
                         (effect_size_ci(sx, sy, groups=np.r_[w[is_x], w[~is_x]], rng=np.random.default_rng(k))
                          for k in range(20))])
        ms = (time.perf_counter() - t0) / 20 * 1000
        print(f"  gpq-words {n}+{n} words x {T} sentences: low {ends[:, 0].mean():+.4f} (range "
              f"{np.ptp(ends[:, 0]):.5f}), high {ends[:, 1].mean():+.4f} (range {np.ptp(ends[:, 1]):.5f}); "
              f"{ms:.0f} ms an interval", flush=True)


def section_glove(args):
    """Real vectors, no bias by construction: 16 random common words (wordfreq ranks 1,000-6,000
    in GloVe's vocabulary) split 8/8 in 5 bleached templates, 25 + 25 of Caliskan's pleasant and
    unpleasant words in the same templates as attributes."""
    import tomllib
    from pathlib import Path

    from wordfreq import top_n_list

    from stimkit import stats
    from stimkit.encoders import resolve

    enc = resolve("glove-6b-50d")
    vec = lambda texts: enc.encode(texts, [None] * len(texts)).vectors  # noqa: E731
    lists = tomllib.loads((Path(__file__).resolve().parent.parent / "wordlists" / "caliskan2017.toml").read_text())
    templates = ["This is {}.", "That is {}.", "There is {}.", "Here is {}.", "It is {}."]
    words = [w for w in top_n_list("en", 6000)[1000:] if w.isalpha() and len(w) > 2]
    words = [w for w, v in zip(words, vec(words)) if np.isfinite(v).all()]
    A = vec([t.format(w) for w in lists["pleasant"]["words"][:25] for t in templates])
    B = vec([t.format(w) for w in lists["unpleasant"]["words"][:25] for t in templates])
    rng = np.random.default_rng(0)
    word, template = np.repeat(np.arange(16), 5), np.tile(np.arange(5), 16)
    found = []
    for i in range(args.glove_reps):
        chosen = rng.choice(words, 16, replace=False)
        s = stats.association(vec([t.format(w) for w in chosen for t in templates]), A, B)
        r = crossed_fit(s, word < 8, word, template, rng=np.random.default_rng(i))
        found.append((r.p, two_sided(r.p), r.ci_low <= 0 <= r.ci_high))
    a = np.array(found, dtype=float)
    print(f"\nGloVe, random words (no bias by construction), {len(a)} draws: p <= 0.01 one-sided "
          f"{np.mean(a[:, 0] <= 0.01):.1%}, two-sided {np.mean(a[:, 1] <= 0.01):.1%}; the 95% interval holds 0 in "
          f"{a[:, 2].mean():.1%}", flush=True)


SECTIONS = {"main": section_main, "large": section_large, "gt": section_gt, "attributes": section_attributes, "seeds": section_seeds,
            "glove": section_glove}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--other-reps", type=int, default=500, help="gpq-all's replications in the main cells")
    ap.add_argument("--mixed-reps", type=int, default=200)
    ap.add_argument("--gt-reps", type=int, default=500)
    ap.add_argument("--attr-reps", type=int, default=500)
    ap.add_argument("--glove-reps", type=int, default=500)
    ap.add_argument("--only", choices=list(SECTIONS), action="append")
    args = ap.parse_args()
    t0 = time.perf_counter()
    for name in args.only or list(SECTIONS):
        SECTIONS[name](args)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
