"""`generate` on long word lists through the `word` template: read, render, store.

    python bench/bench_generate.py [N ...]      (default: 5000 20000 200000)
Goal (issue 12): linear in the size of the list; 200,000 words in under 30 s.
Before the fix, reading the list alone was quadratic (5k words 2.8 s, 20k 18.9 s).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from stimkit.stimuli import generate, wordlists
from stimkit import store
from stimkit.stimuli.generate import SetSpec


def one(n: int, folder: Path) -> dict:
    lists = folder / f"n{n}"
    lists.mkdir()
    # One word per line, as people write long lists; a few tables so kinds vary.
    entries = "".join(f'  "w{i}",\n' if i % 7 else f'  {{ word = "W{i}", kind = "name" }},\n' for i in range(n))
    (lists / "big.toml").write_text(f'[big]\ncategory = "Big"\nwords = [\n{entries}]\n')
    t0 = time.perf_counter()
    loaded = wordlists.load_all(lists)
    t1 = time.perf_counter()
    con = store.connect(folder / f"n{n}.duckdb")
    t2 = time.perf_counter()
    report = generate.generate(con, [SetSpec("big", "word")], loaded)
    t3 = time.perf_counter()
    assert report[0]["n_stimuli"] == n
    con.close()
    return {"words": n, "read": t1 - t0, "render+write": t3 - t2, "total": (t1 - t0) + (t3 - t2)}


def main(sizes: list[int]) -> None:
    print(f"{'words':>8} {'read s':>8} {'render+write s':>15} {'total s':>8} {'us/word':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            r = one(n, Path(tmp))
            print(f"{n:>8} {r['read']:>8.2f} {r['render+write']:>15.2f} {r['total']:>8.2f} {1e6 * r['total'] / n:>8.1f}",
                  flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [5_000, 20_000, 200_000])
