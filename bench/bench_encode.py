"""Encoding throughput over every catalog stimulus, cold (empty store) and warm (all cached).

Each encoder runs in its own process so that its peak memory (max RSS) is its own.
    python bench/bench_encode.py [ENCODER ...]      (default: minilm use-m3)
Goal (issue 3): warm = the whole catalog read back from the store in under one second.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def one(spec: str, db: str) -> dict:

    from stimkit import catalog, embeddings, generate, store, wordlists
    from stimkit.catalog import default_specs
    from stimkit.encoders import resolve

    con = store.connect(db)
    lists = wordlists.load_all()
    generate.generate(con, default_specs(lists), lists)
    frames = [f for t in catalog.load_toml().values() for f in catalog.fetch_sets(con, t).values()]
    stimuli = embeddings.stimuli_of(frames).unique()
    enc = resolve(spec)
    t0 = time.perf_counter()
    cold = embeddings.encode_missing(con, enc, stimuli)
    embeddings.load(con, enc, stimuli)
    cold_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm = embeddings.encode_missing(con, enc, stimuli)
    matrix, _ = embeddings.load(con, enc, stimuli)
    warm_s = time.perf_counter() - t0
    assert warm["encoded"] == 0 and matrix.shape[0] == stimuli.height
    return {"encoder": enc.spec, "texts": cold["wanted"], "cold_s": cold_s, "encode_s": cold["seconds"],
            "warm_s": warm_s, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main(specs: list[str]):
    print(f"{'encoder':<24}{'texts':>7}{'cold s':>9}{'sent/s':>9}{'warm s':>9}{'peak MB':>9}")
    for spec in specs:
        with tempfile.TemporaryDirectory() as d:
            out = subprocess.run([sys.executable, __file__, "--one", spec, str(Path(d) / "b.duckdb")],
                                 capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{r['encoder']:<24}{r['texts']:>7}{r['cold_s']:>9.2f}{r['texts'] / r['encode_s']:>9.0f}"
              f"{r['warm_s']:>9.3f}{r['peak_rss_mb']:>9.0f}  warm goal <1s: {'met' if r['warm_s'] < 1 else 'MISSED'}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], sys.argv[3])))
    else:
        main(sys.argv[1:] or ["minilm", "use-m3"])
