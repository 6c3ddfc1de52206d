"""How much centring moves d on the embedded encoders (stats.centering), on catalog tests.

For each test and encoder: Caliskan's d on the raw vectors, after `mean` centring and after
all-but-the-top (`abtt:K`, Mu & Viswanath 2018), with the test's own four sets (X u Y u A u B)
as the reference; and the mean cosine between random pairs of stimuli before and after (the
common direction that inflates every cosine).

    python bench/bench_center.py                         glove-6b-50d and minilm, six tests
    python bench/bench_center.py -e use-m3 -t sent-weat1 -k 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TESTS = ["weat1", "weat3", "weat6", "sent-weat1", "sent-weat3", "sent-weat6"]


def mean_cosine(vectors: np.ndarray, rng) -> float:
    from stimkit.stats import unit_rows

    u = unit_rows(vectors)
    i, j = rng.integers(0, len(u), 2000), rng.integers(0, len(u), 2000)
    keep = i != j
    return float(np.mean(np.sum(u[i[keep]] * u[j[keep]], axis=1)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-e", "--encoder", action="append", help="encoder specs (default: glove-6b-50d, minilm)")
    parser.add_argument("-t", "--test", action="append", help="catalog tests (default: six)")
    parser.add_argument("-k", type=int, default=1, help="K for abtt:K (Mu & Viswanath: about dim/100)")
    args = parser.parse_args()
    from stimkit import store
    from stimkit.catalog.definitions import default_specs, get
    from stimkit.encoders.embeddings import encode_missing
    from stimkit.run import plan as run_plan
    from stimkit.run.association import prepare
    from stimkit.run.options import Options
    from stimkit.stats import association, effect_size
    from stimkit.stats.centering import center
    from stimkit.stimuli import generate, wordlists

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        con = store.connect(Path(d) / "c.duckdb")
        lists = wordlists.load_all()
        generate.generate(con, default_specs(lists), lists)
        print(f"{'test':<12} {'encoder':<14} {'d raw':>7} {'d mean':>7} {'d abtt:' + str(args.k):>8}  "
              f"{'cos raw':>7} {'cos mean':>8}")
        moves = []
        for spec in args.encoder or ["glove-6b-50d", "minilm"]:
            for name in args.test or TESTS:
                plan = run_plan.make(con, [get(con, name)], [spec], Options())  # the run's own path
                for enc, stimuli in plan.encodings:
                    encode_missing(con, enc, stimuli)
                planned, enc = plan.pairs[0]
                prep = prepare(con, planned, enc, planned.options)
                X, Y, A, B = (prep.vectors[r] for r in ("x", "y", "a", "b"))
                reference = np.concatenate([X, Y, A, B])
                row = []
                for method, k in (("raw", None), ("mean", None), ("abtt", args.k)):
                    sets = [X, Y, A, B] if method == "raw" else [center(v, reference, method, k) for v in (X, Y, A, B)]
                    s = association(np.concatenate(sets[:2]), sets[2], sets[3])
                    row.append(effect_size(s[:len(X)], s[len(X):]))
                cos = (mean_cosine(reference, rng), mean_cosine(center(reference, reference), rng))
                moves.append(abs(row[1] - row[0]))
                print(f"{name:<12} {spec:<14} {row[0]:7.3f} {row[1]:7.3f} {row[2]:8.3f}  {cos[0]:7.3f} {cos[1]:8.3f}")
        print(f"|d(mean) - d(raw)|: median {np.median(moves):.3f}, max {np.max(moves):.3f} over {len(moves)} (test, encoder)")


if __name__ == "__main__":
    main()
