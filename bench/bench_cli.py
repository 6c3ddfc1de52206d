"""The CLI paths users run, as whole processes, this tree against v0.3.x, interleaved.

    python bench/bench_cli.py [--runs 5] [--run-pairs 3] [--v03 /tmp/v03] [--keep run.duckdb]

Each case runs its command with this tree first on PYTHONPATH, then (where v0.3.x has the
command) with the v0.3.x tree, alternating, `--runs` times each, each tree's bytecode kept
as a user's is (see env_for); it prints the median of
each side, their ratio (this tree / v0.3.x) and the goal. v0.3.x is commit 08744c8, checked
out with `git worktree add /tmp/v03 08744c8` (left out, with its column blank, if absent).
The machine's load is printed first: timings on a loaded machine are noisy, read the spread.

Cases (the issue's, goals from issue 41):
- --help                                                        goal < 0.3 s
- results on a store with one result                            goal < 0.5 s
- a warm no-op encode (`encode -e glove-6b-50d --all`, all stored)  goal < 1 s
- WEAT on weat1..weat10 through the CLI, warm store, GloVe      goal < 2.5 s
- all ten metrics on them, the same command with --metric       goal < 5 s
- `stimkit run` on a fresh store, --run-pairs pairs (0: skipped; about a minute each)
                                                                 goal ratio <= 1.0
- results on the make-run store (the store the last run wrote)  ratio
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CALISKAN = [f"weat{i}" for i in range(1, 11)]
METRICS = "weat,gweat,ripa,rnd,semaxis,ect,rnsb,mac,same,direct_bias"


def env_for(tree: Path) -> dict:
    """As a user runs them: Python keeps each tree's bytecode (__pycache__, written by the setup
    runs; pip compiles an installed package's at install). With PYTHONDONTWRITEBYTECODE in the
    environment (this sandbox sets it) and no __pycache__ yet, every stimkit module would be
    compiled on every run, about 0.1 s of a small reading, for both trees."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def once(tree: Path, args: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "stimkit", *args], env=env_for(tree), cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: stimkit {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return took


def row(name: str, now: list[float], old: list[float] | None, goal: str) -> None:
    m = statistics.median(now)
    mo = statistics.median(old) if old else None
    ratio = f"{m / mo:6.2f}" if mo else "      "
    spread = ", ".join(f"{x:.2f}" for x in now)
    print(f"{name:<34} {m:8.2f} {'' if mo is None else f'{mo:8.2f}':>8} {ratio}  {goal:<14} (this tree: {spread})")


def setup(tree: Path, d: Path) -> dict[str, str]:
    """Per tree: a store with one result, and a warm store with the Caliskan word tests' sets
    and GloVe's vectors (a first run of the timed command)."""
    small, warm = str(d / "small.duckdb"), str(d / "warm.duckdb")
    for args in (["--db", small, "generate", "-q", "-w", "flowers", "-w", "insects", "-w", "pleasant", "-w",
                  "unpleasant", "-t", "word"],
                 ["--db", small, "test", "weat1", "-e", "glove-6b-50d", "--budget", "1000", "-q"],
                 ["--db", warm, "test", *CALISKAN, "-e", "glove-6b-50d", "--metric", METRICS],
                 ["--db", warm, "encode", "-e", "glove-6b-50d", "--all"]):
        once(tree, args, d)
    return {"small": small, "warm": warm}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--run-pairs", type=int, default=3)
    parser.add_argument("--v03", type=Path, default=Path("/tmp/v03"))
    parser.add_argument("--keep", type=Path, help="copy this tree's last fresh-store run here (for compare_runs.py)")
    args = parser.parse_args()
    trees = {"now": HERE}
    if (args.v03 / "stimkit" / "__init__.py").exists():
        trees["v03"] = args.v03
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; this tree {HERE}; "
          f"v0.3.x {trees.get('v03', 'absent')}; bytecode kept (__pycache__)")
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {k: Path(tmp) / k for k in trees}
        for d in dirs.values():
            d.mkdir()
        stores = {k: setup(tree, dirs[k]) for k, tree in trees.items()}
        cases = [
            ("--help", lambda s: ["--help"], "< 0.3 s"),
            ("results, one result", lambda s: ["--db", s["small"], "results"], "< 0.5 s"),
            ("encode, warm no-op", lambda s: ["--db", s["warm"], "encode", "-e", "glove-6b-50d", "--all"], "< 1 s"),
            ("weat1..weat10, GloVe, WEAT", lambda s: ["--db", s["warm"], "test", *CALISKAN, "-e", "glove-6b-50d",
                                                       "-q"], "< 2.5 s"),
            ("weat1..weat10, GloVe, 10 metrics", lambda s: ["--db", s["warm"], "test", *CALISKAN, "-e",
                                                             "glove-6b-50d", "--metric", METRICS, "-q"], "< 5 s"),
        ]
        print(f"{'command':<34} {'now s':>8} {'v0.3 s':>8} {'ratio':>6}  goal")
        for name, argv, goal in cases:
            times: dict[str, list[float]] = {k: [] for k in trees}
            for _ in range(args.runs):
                for k, tree in trees.items():   # interleaved: now, v0.3, now, v0.3, ...
                    times[k].append(once(tree, argv(stores[k]), dirs[k]))
            row(name, times["now"], times.get("v03"), goal)
        if args.run_pairs:
            times = {k: [] for k in trees}
            for i in range(args.run_pairs):
                for k, tree in trees.items():
                    db = dirs[k] / f"run{i}.duckdb"
                    times[k].append(once(tree, ["--db", str(db), "run"], dirs[k]))
                    stores[k]["run"] = str(db)
            row("stimkit run, fresh store", times["now"], times.get("v03"), "ratio <= 1.0")
            if args.keep:
                shutil.copy(stores["now"]["run"], args.keep)
            times = {k: [] for k in trees}
            for _ in range(args.runs):
                for k, tree in trees.items():
                    times[k].append(once(tree, ["--db", stores[k]["run"], "results"], dirs[k]))
            row("results, the make-run store", times["now"], times.get("v03"), "")
        for d in dirs.values():
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
