"""Minimal pairs on SmolLM2-135M (issue 51): the study examples/minimal-pairs/study.toml run in
a fresh store, and the figures docs/methods/minimal-pairs.md quotes.

    python bench/bench_minimal_pairs.py                  # the study as written (K = 100)
    python bench/bench_minimal_pairs.py --sets 20        # a smaller baseline
    python bench/bench_minimal_pairs.py --weat           # the likelihood WEAT form instead (templates/fmat)

Printed: the result (d with its interval, p with words as units, the crossed d with its interval
and the variance shares), the matched baseline (percentile of d, the random d's median and
range, the share of random pairs rejected), the mean per-pair difference by template, the
sentences scored and the seconds each step took (2 cores, CPU, fp32).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import stimkit  # noqa: E402
from stimkit.study import study as studies  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=None, help="the baseline's K (default: the study's)")
    ap.add_argument("--encoder", default=None, help="another scoring encoder (default: the study's)")
    ap.add_argument("--weat", action="store_true", help="the WEAT form: male vs female names, career vs family "
                                                        "attributes in templates/fmat (no baseline)")
    args = ap.parse_args()
    if args.weat:
        return weat(args.encoder or "smollm2-135m")
    study = studies.load(REPO / "examples" / "minimal-pairs" / "study.toml")
    if args.sets is not None:
        from dataclasses import replace
        study = replace(study, baseline={**(study.baseline or {}), "sets": args.sets})
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with stimkit.open(Path(tmp) / "s.duckdb") as s:
            run = s.run(study, [args.encoder] if args.encoder else None)
            seconds = time.perf_counter() - started
            r = run.run.results[0]
            print(f"study {study.name}: {r.test} on {r.encoder} ({r.context}), {seconds:.0f} s in all")
            print(f"  sentences X/Y {r.n_x}/{r.n_y}, templates {r.n_templates}, units {r.units}, {r.alternative}")
            print(f"  d {r.effect_size:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] ({r.ci_method}),"
                  f" p (words as units) {r.p_words:.4g} ({r.p_words_method})")
            print(f"  crossed d {r.crossed_d:+.3f} [{r.crossed_ci_low:+.3f}, {r.crossed_ci_high:+.3f}] "
                  f"p {r.crossed_p:.4g} df {r.crossed_df:.1f} ({r.crossed_method})")
            print(f"  variance shares: words {r.var_share_words:.3f}, templates {r.var_share_templates:.3f}, "
                  f"group x template {r.var_share_group_template:.3f}, residual {r.var_share_residual:.3f}")
            for b in run.run.baselines:
                print(f"  baseline K={b.k}: d at the {b.percentile:.1f}th percentile; random d median {b.d_median:+.3f} "
                      f"[{b.d_low:+.3f}, {b.d_high:+.3f}]; {100 * b.fpr:.1f}% rejected at {b.alpha}; "
                      f"X vs its random names {b.d_x:+.3f}, Y vs its random names {b.d_y:+.3f}; {b.seconds:.1f} s")
            pairs = s.query("SELECT frame, count(*) AS pairs, round(avg(difference), 3) AS mean_difference, "
                            "round(avg((difference > 0)::INT), 3) AS x_more_probable FROM result_pairs "
                            "GROUP BY frame ORDER BY frame")
            print(pairs)
            n = s.query("SELECT count(DISTINCT text) AS texts, count(*) AS tokens FROM token_scores")
            print(f"  scored: {n['texts'][0]} sentences, {n['tokens'][0]} tokens")


def weat(encoder: str) -> None:
    """The likelihood WEAT form of C6 (male vs female names, career vs family) on templates/fmat."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with stimkit.open(Path(tmp) / "s.duckdb") as s:
            report = s.test(x="target=male_names@fmat", y="target=female_names@fmat", a="career@word",
                            b="family@word", name="fmat-weat6", encoders=[encoder], units="words",
                            alternative="two-sided")
            r = report.results[0]
            print(f"fmat-weat6 on {r.encoder} ({r.context}), {time.perf_counter() - started:.0f} s in all")
            print(f"  cells X/Y {r.n_x}/{r.n_y} (word x template), templates {r.n_templates}, units {r.units}, "
                  f"{r.alternative}")
            print(f"  d {r.effect_size:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] ({r.ci_method}),"
                  f" p (words as units) {r.p_words:.4g} ({r.p_words_method})")
            print(f"  crossed d {r.crossed_d:+.3f} [{r.crossed_ci_low:+.3f}, {r.crossed_ci_high:+.3f}] "
                  f"p {r.crossed_p:.4g} df {r.crossed_df:.1f} ({r.crossed_method})")
            print(s.query("SELECT role, round(avg(association), 3) AS mean_s FROM result_items "
                          "WHERE association IS NOT NULL GROUP BY role ORDER BY role"))


if __name__ == "__main__":
    main()
