"""Matched random baselines (issue 32): the frequency confound they answer, and their speed.

    python bench/bench_baseline.py                 # both parts (MiniLM on CPU: several minutes)
    python bench/bench_baseline.py --part confound --encoders glove-6b-50d
    python bench/bench_baseline.py --part speed

1. The frequency confound, word level, 8 + 8 random target words against Caliskan's pleasant /
   unpleasant attributes (25 + 25), `--draws` draws, exact two-sided permutation p at 0.01:
   - same band: X and Y both from frequency ranks 1,000-10,000 of wordfreq's English list
     (alphabetic words the encoder represents, the attribute words left out);
   - frequent vs rare: Y from ranks 40,000-80,000 instead;
   - frequent vs matched: each Y word drawn by stimkit's matcher (stimuli.diagnostics: Zipf within
     0.25 of an X word, the same subword count under the encoder's tokenizer, in a static
     vocabulary) from the whole list;
   - frequent vs rare, read against its matched baseline: for each frequent-vs-rare pair, `--k`
     random pairs matched word for word to X and to Y; "large" when its d lies more than 0.8
     from its baseline's median d, "rejected" when its two-sided Monte Carlo p against the
     baseline's d (stats.baseline.monte_carlo_p) is <= 0.01 (reachable from K = 199 on).
   Printed: median |d|, the share with |d| > 0.8, and the share with p <= 0.01.
2. Speed (`stimkit baseline`, K = 1,000): a word test (weat6) on GloVe through the CLI, fresh
   and reused; a sentence test (sent-weat6) on MiniLM on CPU with word and with sentence units:
   drawing and rendering, encoding the new stimuli, and the statistics, timed apart.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from stimkit import encoders, stats  # noqa: E402
from stimkit.stats import baseline as bstats  # noqa: E402
from stimkit.stimuli import diagnostics, wordlists  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "stimkit-bench-baseline"


def vectors_for(enc, words: list[str]) -> dict[str, np.ndarray]:
    """Each word's vector (the word alone as the text), cached on disk per encoder."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{enc.fingerprint}.npz"
    known = dict(np.load(path, allow_pickle=True)["items"].item()) if path.exists() else {}
    todo = [w for w in dict.fromkeys(words) if w not in known]
    if todo:
        started = time.perf_counter()
        for at in range(0, len(todo), 8192):  # saved as it goes: an interrupted run keeps what it encoded
            chunk = todo[at:at + 8192]
            known.update(zip(chunk, enc.encode(chunk, [None] * len(chunk)).vectors))
            np.savez(path, items=np.array(known, dtype=object))
        print(f"  encoded {len(todo):,} words with {enc.spec} in {time.perf_counter() - started:.1f}s", flush=True)
    return {w: known[w] for w in words}


def confound(spec: str, n_draws: int, k: int, seed: int) -> None:
    enc = encoders.resolve(spec)
    lists = wordlists.load_all()
    attributes = [w.text for name in ("pleasant", "unpleasant") for w in lists[name].words]
    vocab = diagnostics.reference_vocabulary()
    attr = {w.lower() for w in attributes}
    pieces = enc.subword_counts(list(vocab.words))
    keep = np.array([w not in attr for w in vocab.words]) & (pieces > 0)
    words = np.array(vocab.words, dtype=object)[keep]
    zipf, pieces = vocab.zipf[keep], pieces[keep]
    frequent, rare = np.arange(1_000, 10_000), np.arange(40_000, 80_000)
    print(f"\n{spec}: {len(words):,} reference words it represents; ranks 1,000-10,000 Zipf "
          f"{zipf[9_999]:.2f}-{zipf[1_000]:.2f}, ranks 40,000-80,000 Zipf {zipf[79_999]:.2f}-{zipf[40_000]:.2f}", flush=True)
    rng = np.random.default_rng(seed)

    def matched(targets: np.ndarray, exclude: set[int], kk: int) -> np.ndarray:
        """kk matched draws (targets x kk indices), stimkit's matcher: Zipf, subword count, distinct."""
        allowed = diagnostics.eligible(zipf[targets], zipf, 0.25)
        allowed &= (pieces[None, :] > 0) if enc.static else (pieces[None, :] == pieces[targets][:, None])
        allowed[:, list(exclude)] = False
        return diagnostics.draw(allowed, kk, rng, [words[t] for t in targets], [""] * len(targets))

    X = np.array([rng.choice(frequent, 8, replace=False) for _ in range(n_draws)])
    same = np.array([rng.choice(np.setdiff1d(frequent, x), 8, replace=False) for x in X])
    rare_y = np.array([rng.choice(rare, 8, replace=False) for _ in range(n_draws)])
    matched_y = np.array([matched(x, set(x), 1)[:, 0] for x in X])
    baselines = [matched(np.r_[x, y], set(x) | set(y), k) for x, y in zip(X, rare_y)]   # (16, k) each
    needed = sorted({int(i) for arr in (X, same, rare_y, matched_y, *baselines) for i in np.ravel(arr)})
    vec = vectors_for(enc, [words[i] for i in needed] + attributes)
    V = np.array([vec[words[i]] for i in needed])
    A = np.array([vec[w] for w in attributes[:len(lists["pleasant"].words)]])
    B = np.array([vec[w] for w in attributes[len(lists["pleasant"].words):]])
    s = np.full(len(words), np.nan)
    s[needed] = stats.association(V, A, B)

    def report(name: str, sx: np.ndarray, sy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        S = np.concatenate([sx, sy])
        d = bstats.effect_sizes(sx, sy)
        p = stats.permutation_p(S, 8, "two-sided", "exact").p
        print(f"  {name:<38} median |d| {np.median(np.abs(d)):.2f}   |d| > 0.8 {np.mean(np.abs(d) > 0.8):6.1%}   "
              f"p <= 0.01 {np.mean(p <= 0.01):6.1%}", flush=True)
        return d, p

    print(f"  {n_draws} draws of 8 + 8 words, pleasant/unpleasant attributes, exact two-sided p")
    report("same band (1k-10k vs 1k-10k)", s[X.T], s[same.T])
    d_rare, _ = report("frequent vs rare (1k-10k vs 40k-80k)", s[X.T], s[rare_y.T])
    report("frequent vs matched (stimkit matcher)", s[X.T], s[matched_y.T])
    pct, off, p_base = [], [], []
    for d_obs, b in zip(d_rare, baselines):
        random_d = bstats.effect_sizes(s[b[:8]], s[b[8:]])
        pct.append(bstats.percentile(d_obs, random_d))
        off.append(abs(d_obs - np.median(random_d)) > 0.8)
        p_base.append(bstats.monte_carlo_p(d_obs, random_d))
    pct = np.array(pct)
    print(f"  {'frequent vs rare, against its baseline':<38} |d - baseline median| > 0.8 {np.mean(off):6.1%}   "
          f"p against the baseline <= 0.01 {np.mean(np.array(p_base) <= 0.01):6.1%}")
    print(f"  {'  (' + str(k) + ' matched pairs each)':<38} percentile of d: median {np.median(pct):.0f}, "
          f"IQR {np.percentile(pct, 25):.0f}-{np.percentile(pct, 75):.0f} (uniform: 50, 25-75)")


def speed(budget: int) -> None:
    import stimkit
    from stimkit.run import plan as run_plan
    from stimkit.run.baseline import BaselineOptions, with_baselines
    from stimkit.run.execute import execute
    from stimkit.run.options import Options

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "s.duckdb"
        cli = [sys.executable, "-m", "stimkit", "--db", str(db)]
        subprocess.run(cli + ["test", "weat6", "sent-weat6", "-e", "glove-6b-50d", "-e", "minilm", "--budget", "1000",
                              "-q"], env=env, check=True, capture_output=True)
        print(f"\nspeed, K = 1,000 (the test's sets generated and encoded already; {os.cpu_count()} cores, shared)")
        for label in ("fresh", "reused"):
            started = time.perf_counter()
            subprocess.run(cli + ["baseline", "weat6", "-e", "glove-6b-50d", "--sets", "1000", "--seed", "7",
                                  "--format", "csv"], env=env, check=True, capture_output=True)
            print(f"  weat6 on GloVe, `stimkit baseline --sets 1000` ({label}): {time.perf_counter() - started:.1f}s wall")
        with stimkit.open(db) as store:
            for units, clustered in (("words", True), ("sentences", False)):
                opts = Options(clustered=clustered, budget=budget, alternative="two-sided")
                started = time.perf_counter()
                plan = run_plan.make(store.con, [store.test_sets("sent-weat6")[0]], ["minilm"], opts)
                plan = with_baselines(store.con, plan, BaselineOptions(sets=1000, seed=7), store._baseline_inputs(),
                                      keep_tests=False)
                (pb,) = plan.baselines
                drawn = time.perf_counter() - started
                started = time.perf_counter()
                reports, _ = store._encode_plan(plan)
                encoded = time.perf_counter() - started
                new = sum(r.get("encoded", 0) for r in reports) if reports and isinstance(reports[0], dict) else "?"
                report = execute(store.con, plan, "bench")
                (b,) = report.baselines
                print(f"  sent-weat6 on MiniLM (CPU), {units} as units: draw + render {drawn:.1f}s "
                      f"({pb.draws.stimuli.height:,} distinct drawn sentences), encode {encoded:.1f}s "
                      f"({new} new), statistics {b.seconds:.2f}s ({b.p_method}, {b.samples:,} partitions a pair); "
                      f"d {b.observed_d:+.2f} at percentile {b.percentile:.1f}, FPR {b.fpr:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("confound", "speed", "all"), default="all")
    ap.add_argument("--encoders", default="glove-6b-50d,minilm")
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--k", type=int, default=200, help="matched pairs per draw in the baseline reading (>= 199)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=100_000, help="the sentence test's permutation budget")
    args = ap.parse_args()
    if args.part in ("confound", "all"):
        for spec in args.encoders.split(","):
            confound(spec, args.draws, args.k, args.seed)
    if args.part in ("speed", "all"):
        speed(args.budget)


if __name__ == "__main__":
    main()
