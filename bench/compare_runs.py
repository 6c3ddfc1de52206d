"""Are two runs' numbers the same? Compares one run of each of two stores, result by result.

    python bench/compare_runs.py BEFORE.duckdb AFTER.duckdb [--run-a ID] [--run-b ID] [--tol 1e-6]

Results are matched by their id without the run (test / encoder fingerprint [/ metric]); each
store's latest run unless --run-a / --run-b name one. Every matched result must have the same
d, p, interval, p_words, crossed d and crossed p to --tol (absolute; both NULL counts as equal),
and each word left out the same d_without. The leave-one-word-out p's are Monte Carlo estimates
(stats.influence): they must agree within 4 of their combined standard errors (each side's
binomial error at their mean p, the after store's draws from its p_se, the before store's
by the same protocol); the share beyond 2 and 3 is printed beside what a normal law gives
(4.6% and 0.27%). Exit 1 on any difference.
"""

from __future__ import annotations

import argparse
import math
import sys

import duckdb

FIRST, DECIDED_SE = 2_000, 3.3   # stats.influence.FIRST_DRAWS and DECIDED_SE
COLUMNS = ("effect_size", "p_value", "ci_low", "ci_high", "p_words", "crossed_d", "crossed_p")


def latest(con, run: str | None) -> str:
    if run:
        return run
    return con.execute("SELECT max(run_id) FROM results").fetchone()[0]


def results(con, run: str) -> dict[str, dict]:
    cols = ", ".join(COLUMNS)
    rows = con.execute(f"SELECT result_id, {cols} FROM results WHERE run_id = ?", [run]).fetchall()
    return {r[0].split("/", 1)[1]: dict(zip(COLUMNS, r[1:])) for r in rows}


def influence(con, run: str) -> dict[tuple, tuple]:
    has_se = "p_se" in {c[0] for c in con.execute("DESCRIBE result_influence").fetchall()}
    rows = con.execute(f"SELECT i.result_id, i.role, i.word, i.d_without, i.p_without, i.p_method, "
                       f"{'i.p_se' if has_se else 'NULL'} FROM result_influence i JOIN results r USING (result_id) "
                       "WHERE r.run_id = ?", [run]).fetchall()
    return {(r[0].split("/", 1)[1], r[1], r[2]): r[3:] for r in rows}


def differs(a, b, tol: float) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) != math.isnan(b)
    return abs(a - b) > tol


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--run-a")
    parser.add_argument("--run-b")
    parser.add_argument("--tol", type=float, default=1e-6)
    args = parser.parse_args()
    a_con = duckdb.connect(args.before, read_only=True)
    b_con = duckdb.connect(args.after, read_only=True)
    run_a, run_b = latest(a_con, args.run_a), latest(b_con, args.run_b)
    a, b = results(a_con, run_a), results(b_con, run_b)
    print(f"before: {args.before} run {run_a}, {len(a)} results; after: {args.after} run {run_b}, {len(b)} results")
    bad = 0
    for key in sorted(set(a) ^ set(b)):
        print(f"  only in {'before' if key in a else 'after'}: {key}")
        bad += 1
    worst = dict.fromkeys(COLUMNS, 0.0)
    for key in sorted(set(a) & set(b)):
        for col in COLUMNS:
            x, y = a[key][col], b[key][col]
            if differs(x, y, args.tol):
                print(f"  {key} {col}: {x!r} -> {y!r}")
                bad += 1
            elif x is not None and y is not None and not (math.isnan(x) or math.isnan(y)):
                worst[col] = max(worst[col], abs(x - y))
    print(f"{len(set(a) & set(b))} results compared on {', '.join(COLUMNS)}: "
          f"{'all equal' if not bad else f'{bad} differences'} to {args.tol:g}")
    print("  largest difference: " + ", ".join(f"{c} {v:.1e}" for c, v in worst.items()))
    ia, ib = influence(a_con, run_a), influence(b_con, run_b)
    alphas = {r[0].split("/", 1)[1]: r[1] for r in b_con.execute(
        "SELECT result_id, influence_alpha FROM results WHERE run_id = ?", [run_b]).fetchall()}
    d_bad, z, far, flips = 0, [], 0, 0
    for key in sorted(set(ia) & set(ib)):
        (da, pa, ma, _), (db, pb, mb, se) = ia[key], ib[key]
        if differs(da, db, args.tol):
            d_bad += 1
        if pa is None or pb is None:
            if (pa is None) != (pb is None):
                far += 1
            continue
        if ma.startswith("exact") and mb.startswith("exact"):
            far += differs(pa, pb, 1e-12)
            continue
        # each side's draws: the after store's from its p_se; the before store's by the same
        # protocol (stats.influence: FIRST_DRAWS, again with the influence budget near alpha)
        alpha = alphas[key[0]]
        mean = (pa + pb) / 2
        draws_b = pb * (1 - pb) / se ** 2 if se else FIRST
        near = abs(pa - alpha) <= DECIDED_SE * math.sqrt(alpha * (1 - alpha) / FIRST)
        draws_a = max(draws_b, FIRST) if near else FIRST
        combined = math.sqrt(max(mean * (1 - mean), 1 / FIRST) * (1 / draws_a + 1 / draws_b))
        score = abs(pa - pb) / combined
        z.append(score)
        if score > 4:
            far += 1
            print(f"  {key}: p_without {pa:.5f} ({ma}) -> {pb:.5f} ({mb}, Monte Carlo SE {se:.5f})")
    missing = len(set(ia) ^ set(ib))
    print(f"{len(set(ia) & set(ib))} words left out compared ({missing} in one run only): d_without "
          f"{'all equal' if not d_bad else f'{d_bad} differ'} to {args.tol:g}; sampled p's: {len(z)}, "
          f"beyond 2 SE {sum(s > 2 for s in z) / max(len(z), 1):.1%} (normal 4.6%), beyond 3 SE "
          f"{sum(s > 3 for s in z) / max(len(z), 1):.2%} (normal 0.27%), beyond 4 SE or exact p's differing: {far}")
    return 1 if bad or d_bad or far or missing else 0


if __name__ == "__main__":
    sys.exit(main())
