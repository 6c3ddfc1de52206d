"""Contexts from a corpus (issue 42): extracting and sampling contexts for 100 words from a
1,000,000-sentence corpus, and memory flat in the corpus size.

    python bench/bench_corpus.py                       # 250,000 and 1,000,000 sentences
    python bench/bench_corpus.py --sentences 1000000 --per-word 100

The corpus is built in a temporary folder (never in the repository) from the inaugural addresses
of tests/fixtures/corpus/inaugural/, their paragraphs repeated until the corpus holds the number
of sentences asked for (shuffled per copy, so each copy's lines differ in order), in files of
about 100,000 sentences. 100 words: the words of Caliskan's lists (pleasant, unpleasant, career,
family, male and female terms, male and female names (matched in their own case), math, arts,
...) in order, the first 100. Each size runs
in a child process (catalog.corpus.scan: the file reading, sentence splitting, DuckDB matching
and seeded sampling that `stimkit import corpus` does before it stores the sets) with DuckDB on 2
threads; printed: wall seconds, sentences a second, the child's peak resident memory.

    python bench/bench_corpus.py --ceat                  # CEAT's N: 1,000 and 10,000 draws

--ceat times CEAT's combined effect size (stats.ceat.combined_effect_size, what `stimkit audit
ceat --samples N` adds to a test's own run) for N draws of one context a word, on Caliskan's list
sizes (8 words a list, as C6-C8; 25, as C1-C2), 100 contexts a word, in MiniLM's 384 and BERT's
768 dimensions, numpy on 2 threads: the draws' cost does not depend on the vectors' values, so
they are seeded random. The median of 3 runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LISTS = ["pleasant", "unpleasant", "career", "family", "male_terms", "female_terms", "male_names", "female_names",
         "math", "arts", "science", "arts_c8", "male_terms_c8", "female_terms_c8", "instruments", "weapons", "flowers",
         "insects"]


def build(folder: Path, n_sentences: int) -> list[Path]:
    sys.path.insert(0, str(REPO))
    from stimkit.catalog.corpus import sentences

    paras = [line for f in sorted((REPO / "tests/fixtures/corpus/inaugural").glob("*.txt"))
             for line in f.read_text().splitlines() if line.strip()]
    per_para = [sum(1 for _ in sentences(p)) for p in paras]
    rng = random.Random(0)
    files, total, k, out, in_file = [], 0, 0, None, 0
    while total < n_sentences:
        order = list(range(len(paras)))
        rng.shuffle(order)
        for i in order:
            if out is None or in_file >= 100_000:
                if out:
                    out.close()
                files.append(folder / f"part-{len(files):03d}.txt")
                out, in_file = open(files[-1], "w"), 0
            out.write(paras[i] + "\n")
            total += per_para[i]
            in_file += per_para[i]
            if total >= n_sentences:
                break
        k += 1
    out.close()
    return files


def child(paths: list[str], per_word: int) -> None:
    import resource
    from dataclasses import replace

    sys.path.insert(0, str(REPO))
    from stimkit.catalog import corpus
    from stimkit.stimuli import wordlists

    every = wordlists.load_all()
    lists, n = {}, 0
    for name in LISTS:
        words = []
        for w in every[name].words:
            if n < 100 and not any(w.text == x.text for wl in lists.values() for x in wl.words):
                words.append(w)
                n += 1
        if words:
            lists[name] = replace(every[name], words=tuple(words))
    started = time.perf_counter()
    found, sampled, counter = corpus.scan([Path(p) for p in paths], lists, per_word, 0)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"words": n, "words_found": len(found), "occurrences": sum(found.values()),
                      "sampled": sum(len(v) for v in sampled.values()), "sentences": counter["sentences"],
                      "seconds": seconds, "peak_mb": peak}))


def ceat(samples: list[int]) -> None:
    import numpy as np

    sys.path.insert(0, str(REPO))
    from stimkit.stats.ceat import combined_effect_size

    print(f"{'words a list':>12} {'dim':>4} {'contexts':>8} {'N':>7} {'s':>6}")
    for words in (8, 25):
        for dim in (384, 768):
            rng = np.random.default_rng(0)
            vectors = [[rng.standard_normal((100, dim)) for _ in range(words)] for _ in range(4)]
            for n in samples:
                times = []
                for _ in range(3):
                    started = time.perf_counter()
                    combined_effect_size(vectors, n, np.random.default_rng(1))
                    times.append(time.perf_counter() - started)
                print(f"{words:>12} {dim:>4} {100:>8} {n:>7,} {sorted(times)[1]:>6.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, nargs="*", default=[250_000, 1_000_000])
    ap.add_argument("--per-word", type=int, default=100)
    ap.add_argument("--child", nargs="*")
    ap.add_argument("--ceat", type=int, nargs="*", help="time CEAT's N draws instead (default: 1,000 and 10,000)")
    args = ap.parse_args()
    if args.child is not None:
        return child(args.child, args.per_word)
    if args.ceat is not None:
        return ceat(args.ceat or [1_000, 10_000])
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    print(f"{'sentences':>10} {'MB':>6} {'words':>6} {'found':>6} {'occurrences':>12} {'kept':>6} {'s':>7} "
          f"{'sent/s':>9} {'peak MB':>8}")
    for n in args.sentences:
        with tempfile.TemporaryDirectory(prefix="stimkit-bench-corpus-") as tmp:
            files = build(Path(tmp), n)
            mb = sum(f.stat().st_size for f in files) / 1e6
            out = subprocess.run([sys.executable, __file__, "--per-word", str(args.per_word), "--child",
                                  *map(str, files)], capture_output=True, text=True, env=env, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{r['sentences']:>10,} {mb:>6.0f} {r['words']:>6} {r['words_found']:>6} {r['occurrences']:>12,} "
                  f"{r['sampled']:>6} {r['seconds']:>7.1f} {r['sentences'] / r['seconds']:>9,.0f} {r['peak_mb']:>8.0f}")


if __name__ == "__main__":
    main()
