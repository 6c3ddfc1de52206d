"""`stimkit train` (issue 52): how fast replicates train, local against Ray, and memory against
their number. Prints its figures.

    python bench/bench_train.py                       # all three parts (a few minutes on 2 cores)
    python bench/bench_train.py --part rate --part memory

The corpus: the US inaugural addresses (../shared/reference/corpora/inaugural where present, its 59 files;
else the suite's 20 in tests/fixtures/corpus/inaugural), word2vec with the defaults (skip-gram,
dim 100, window 5, min-count 5, epochs 10).

1. rate: the CPU seconds of one model (in this process, so that other work on a shared machine
   does not count), as models a minute on two free cores; then `--seeds N` models into a fresh
   store with one worker and with two (a process a model), wall time on this machine as it is.
2. engines: 20 bootstrap replicates with `--engine local --workers 2` and `--engine ray
   --workers 2` (a local Ray cluster started by the command, its start counted), in fresh
   stores; the vectors must be the same. Wall times: the machine's load average is printed.
3. memory: peak resident memory of the command's process (the driver, which writes every
   replicate) and of its largest worker, for 4, 16 and 48 bootstrap replicates: flat when each
   replicate's vectors go to the store as it finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent.parent / "shared" / "reference" / "corpora" / "inaugural"
CORPUS = next((p for p in (SHARED, Path("/work/shared/reference/corpora/inaugural")) if p.is_dir()),
              REPO / "tests" / "fixtures" / "corpus" / "inaugural")

# Run in a child process: train, then report the time and the peak memory of this process and its children.
CHILD = """
import json, resource, sys, time
import stimkit
args = json.loads(sys.argv[1])
t = time.perf_counter()
with stimkit.open(args.pop("db")) as s:
    report = s.train([args.pop("corpus")], **args)
    shas = sorted(r[0] for r in s.con.execute("SELECT vectors_sha256 FROM trained_models").fetchall())
print(json.dumps({"seconds": time.perf_counter() - t, "models": sum(r.status == "new" for r in report.rows),
                  "train_seconds": report.seconds, "n_tokens": report.n_tokens,
                  "self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "shas": shas}))
"""


def train(tmp: Path, tag: str, **options) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = {"db": str(tmp / f"{tag}.duckdb"), "corpus": str(CORPUS), "name": tag, **options}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rate(tmp: Path, seeds: int) -> None:
    print(f"1. models a minute (word2vec, defaults, {CORPUS.name}: {seeds} seeds)")
    sys.path.insert(0, str(REPO))
    from stimkit.catalog import training

    corp = training.read_corpus([CORPUS])
    cpu, wall = [], []
    for k in range(min(seeds, 4)):   # in this process: the CPU time of a model, whatever else the machine runs
        c, w = time.process_time(), time.perf_counter()
        training.train_one(corp.documents, "word2vec", training.Hyper(), training.Replicate("seed", k, k))
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    per = sum(cpu) / len(cpu)
    print(f"   a model: {per:.2f} CPU s ({sum(wall) / len(wall):.2f} s wall) on {corp.n_tokens:,} tokens: "
          f"{120 / per:.0f} models/minute on two free cores (one model a core)")
    for workers in (1, 2):
        r = train(tmp, f"rate{workers}", seeds=seeds, workers=workers)
        print(f"   `train --workers {workers}` on this machine (load: {os.getloadavg()[0]:.1f}): {r['models']} models "
              f"in {r['train_seconds']:.1f} s = {60 * r['models'] / r['train_seconds']:.1f} models/minute")


def engines(tmp: Path, boots: int) -> None:
    print(f"2. {boots} bootstrap replicates, 2 workers, local against Ray on this machine")
    local = train(tmp, "local", seeds=0, bootstrap=boots, workers=2, engine="local")
    started = time.perf_counter()
    ray = train(tmp, "ray", seeds=0, bootstrap=boots, workers=2, engine="ray")
    whole = time.perf_counter() - started
    print(f"   local: {local['train_seconds']:.1f} s (load average {os.getloadavg()[0]:.1f})")
    print(f"   ray:   {ray['train_seconds']:.1f} s (the command, the cluster's start included; process {whole:.1f} s)")
    print(f"   same vectors: {local['shas'] == ray['shas']}")


def memory(tmp: Path, counts: list[int]) -> None:
    print("3. peak resident memory against the number of bootstrap replicates (2 workers)")
    for n in counts:
        r = train(tmp, f"mem{n}", seeds=0, bootstrap=n, workers=2)
        print(f"   {n:3d} replicates: driver {r['self_mb']:.0f} MB, largest worker {r['child_mb']:.0f} MB "
              f"({r['train_seconds']:.1f} s)")


def utf8_copy(folder: Path, target: Path) -> Path:
    """The corpus in UTF-8: the shared copy's 2005-Bush.txt is in cp1252 (one encoding a command)."""
    target.mkdir()
    for f in sorted(folder.glob("*.txt")):
        data = f.read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            data = data.decode("cp1252").encode("utf-8")
        (target / f.name).write_bytes(data)
    return target


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", action="append", choices=("rate", "engines", "memory"))
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--boots", type=int, default=20)
    ap.add_argument("--counts", default="4,16,48")
    a = ap.parse_args()
    parts = a.part or ["rate", "engines", "memory"]
    global CORPUS
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        CORPUS = utf8_copy(CORPUS, tmp / "inaugural")
        print(f"corpus: the inaugural addresses ({len(list(CORPUS.glob('*.txt')))} files); cores: {os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.1f}")
        if "rate" in parts:
            rate(tmp, a.seeds)
        if "engines" in parts:
            engines(tmp, a.boots)
        if "memory" in parts:
            memory(tmp, [int(c) for c in a.counts.split(",")])


if __name__ == "__main__":
    main()
