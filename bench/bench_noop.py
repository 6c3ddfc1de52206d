"""`stimkit run` with nothing changed, on a two-test two-encoder study (issue 48): goal < 2 s.

    python bench/bench_noop.py [--runs 7]

Scaffolds the `stimkit init` study (a word test and a sentence test) with two encoders
(GloVe 6B 50d and MiniLM), runs it once to fill the store, then times `stimkit run` again as
a whole process, `--runs` times: nothing is generated, encoded or computed (each set is
found by its input key, each result by its own). Also times `stimkit status`, which reads the
same keys, and a run after one word was removed (two sets regenerated, two results computed
per encoder). Prints the machine's load first, then the median and the spread of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def stimkit(args, cwd) -> float:
    env = {**os.environ, "PYTHONPATH": str(HERE), "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # keep bytecode, as a user's install does
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "stimkit", *args], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"stimkit {' '.join(args)} failed: {out.stderr.strip()}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        stimkit(["init", "study"], tmp)
        study = Path(tmp) / "study"
        toml = study / "study.toml"
        toml.write_text(toml.read_text().replace('encoders = ["glove-6b-50d"]', 'encoders = ["glove-6b-50d", "minilm"]'))
        first = stimkit(["run"], study)
        print(f"first run (generate, encode, test): {first:.2f} s")
        for what, args in (("run, nothing changed", ["run"]), ("status, nothing changed", ["status"])):
            times = [stimkit(args, study) for _ in range(runs)]
            goal = "  goal < 2 s: " + ("met" if statistics.median(times) < 2 else "MISSED") if args == ["run"] else ""
            print(f"{what}: median {statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, "
                  f"{runs} runs){goal}")
        lists = study / "wordlists" / "food.toml"
        lists.write_text(lists.read_text().replace(', "cheerful"]', "]"))
        print(f"run after removing a word: {stimkit(['run'], study):.2f} s")


if __name__ == "__main__":
    main()
