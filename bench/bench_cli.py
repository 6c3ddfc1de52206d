"""Start-up of the CLI, as whole processes: --help, results, sets and catalog on a small store,
each against `python -c pass` (the floor), median of several runs.

    python bench/bench_cli.py [--runs 7]

Goals (issue 11, on the 2-core machines): --help under 0.3 s, results under 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    stimkit = [sys.executable, "-m", "stimkit"]
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "small.duckdb")
        subprocess.run([*stimkit, "--db", db, "generate", "-q", "-w", "flowers", "-w", "insects", "-w", "pleasant",
                        "-w", "unpleasant", "-t", "word"], check=True, capture_output=True)
        subprocess.run([*stimkit, "--db", db, "test", "--x", "flowers@word", "--y", "insects@word", "--a", "pleasant@word",
                        "--b", "unpleasant@word", "--balance", "cut", "--budget", "1000", "-q"], check=True, capture_output=True)
        floor = timed([sys.executable, "-c", "pass"], runs)
        cases = {
            "--help": [*stimkit, "--help"],
            "results": [*stimkit, "--db", db, "results"],
            "sets": [*stimkit, "--db", db, "sets"],
            "catalog": [*stimkit, "--db", db, "catalog"],
        }
        goals = {"--help": 0.3, "results": 0.5}
        print(f"{'command':<10} {'median s':>9} {'minus python -c pass':>21}  goal")
        print(f"{'python':<10} {floor:>9.3f} {'':>21}")
        for name, cmd in cases.items():
            t = timed(cmd, runs)
            goal = goals.get(name)
            verdict = "" if goal is None else (f"< {goal} s: met" if t < goal else f"< {goal} s: MISSED")
            print(f"{name:<10} {t:>9.3f} {t - floor:>21.3f}  {verdict}")


if __name__ == "__main__":
    main()
