"""CrowS-Pairs on SmolLM2-135M: the wall time of `stimkit test crows-pairs -e smollm2-135m` from
an empty store (goal: under 3 minutes on two cores), and its figures (docs/methods/crows-pairs.md).

    python bench/bench_crows.py [--threads 2] [--seed 0] [--device cpu|cuda] [--dtype bfloat16]

Prints the time to import, to score the 3,016 sentences (token table) and to compute the
variants, then each causal variant's metric score with its 95% bootstrap interval by direction and
bias type; and checks the `sum` variant against lm-evaluation-harness's definition computed here
apart (each sentence's log-probability from the encoder's own scores, every token given BOS,
pct_stereotype = sent_more's higher, ties lose).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent.parent
CSV = HERE / "tests" / "fixtures" / "crows-pairs" / "crows_pairs_anonymized.csv"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default=None)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    import numpy as np

    import stimkit
    from stimkit import store

    spec = "smollm2-135m" + "".join(f",{k}={v}" for k, v in (("device", args.device), ("dtype", args.dtype)) if v)
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        s = stimkit.open(Path(tmp) / "crows.duckdb")
        s.import_crows(CSV)
        imported = time.perf_counter()
        run_id, rows = s.crows(["crows-pairs"], [spec], seed=args.seed)
        done = time.perf_counter()
        print(f"import {imported - started:.1f} s; test crows-pairs -e {spec}: {done - imported:.1f} s "
              f"(whole: {done - started:.1f} s, {args.threads} threads)")
        for variant in ("sum", "mean"):
            print(f"\n{variant}: {next(r.tool for r in rows if r.variant == variant)}")
            for r in rows:
                if r.variant == variant:
                    print(f"  {r.split:<28} n={r.n:>5}  wins={r.wins:>5}  neutral={r.neutral:>2}  "
                          f"{r.score:6.2f}  [{r.ci_low:.2f}, {r.ci_high:.2f}]")
        # lm-evaluation-harness's pct_stereotype, apart: the encoder's own sentence totals
        pairs = store.frame(s.con, "SELECT sent_more, sent_less FROM crows_pairs ORDER BY ordinal")
        from stimkit.encoders import resolve

        enc = resolve(spec)
        texts = pairs["sent_more"].to_list() + pairs["sent_less"].to_list()
        from stimkit.encoders import token_scores

        totals = np.array([sc.total for sc in token_scores.load(s.con, enc.fingerprint, texts)])
        n = pairs.height
        pct = 100 * float(np.mean(totals[:n] > totals[n:]))
        stored = next(r.score for r in rows if r.variant == "sum" and r.split == "all")
        print(f"\nlm-evaluation-harness pct_stereotype from the sentence totals: {pct:.2f} (stored sum: {stored:.2f})")
        assert abs(pct - stored) < 1e-9
        s.close()


if __name__ == "__main__":
    main()
