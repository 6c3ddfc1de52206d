"""HolisticBias at full scale: generate, encode, read (issue 35).

    python bench/bench_scale.py DIR [--sample N] [--repeats R] [--memory N1,N2] [--skip-encode]

DIR holds HolisticBias's four JSON files (tests/fixtures/holistic-bias). Every figure is a
whole process, as a user runs it, timed from start to exit:

  1. `stimkit import holisticbias DIR -o OUT --no-generate`, then `stimkit generate -t holisticbias`
     of the whole product (descriptor=*@holisticbias): seconds and peak RSS (goal: < 60 s and
     < 2 GB on 2 cores), the sentence count against a count made here straight from the JSON
     (the dataset's generator's rules), and the same command again (unchanged: a no-op);
  2. MiniLM on CPU on a sample of N of its sentences (every k-th, default 10,000): the raw
     forward (tokenise once, length-sorted batches of 64, mean pooling, no store) against
     `stimkit encode --set "<the sample's SQL>"`, paired and interleaved, best and spread of R
     (goal: >= 95%); peak RSS of the library's encode at the --memory sizes (goal: flat);
     a kill during an encode and the resume (goal: nothing lost, nothing encoded twice);
  3. `stimkit sets`, `stimkit results`, `stimkit query ...` on that store (goal: < 1 s each).

The machine's cores are shared: run it with `nice`, and read the spread, not one number.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_encode import ENV, RAW, RSS, peak, timed  # noqa: E402  (the same raw forward and timing)

SET = "descriptor=*@holisticbias"


def stimkit(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", RSS, "stimkit", "--db", str(db), *args]


def json_count(folder: Path) -> int:
    """HolisticBias's sentences, counted from its JSON by its generator's rules (not stimkit's):
    a noun alone in every template; a descriptor alone in the templates that take no noun, and
    with each noun of its gender in all; a standalone phrase with each noun, or alone. A phrase
    an axis lists twice counts once (a word list holds a word once)."""
    load = lambda n: json.loads((folder / n).read_text())  # noqa: E731
    nouns = load("nouns.json")
    templates = load("sentence_templates.json")
    all_t, no_noun_t = len(templates), sum(not f.get("must_be_noun") for f in templates.values())
    by_group = {g: len(v) for g, v in nouns.items()}
    n_nouns = sum(by_group.values())
    total = n_nouns * all_t
    for buckets in load("descriptors.json").values():
        for entries in buckets.values():
            for e in entries:
                gender = e.get("gender") if isinstance(e, dict) else None
                total += no_noun_t + (by_group.get(gender, 0) if gender else n_nouns) * all_t
    for entries in load("standalone_noun_phrases.json").values():
        phrases = {e if isinstance(e, str) else e["noun_phrase"] for e in entries}
        total += sum(n_nouns * all_t if "{noun}" in p else no_noun_t for p in phrases)
    return total


def generate(folder: Path, src: Path) -> Path:
    out, db = folder / "hb", folder / "hb.duckdb"
    timed([sys.executable, "-m", "stimkit", "import", "holisticbias", str(src), "-o", str(out), "--no-generate"])
    args = ["generate", "--wordlist-dir", str(out / "wordlists"), "--template-dir", str(out / "templates"),
            "-t", "holisticbias"]
    seconds, output = timed(stimkit(db, *args))
    n = int(next(line.split()[-2] for line in output.splitlines() if SET in line))
    again, _ = timed(stimkit(db, *args))
    size = db.stat().st_size / 2**20
    print(f"generate the whole HolisticBias product ({SET}), whole process on {os.cpu_count()} cores:")
    print(f"  {n:,} sentences (from the JSON: {json_count(src):,})  {seconds:5.1f} s  peak RSS {peak(output):5.0f} MiB  "
          f"store {size:.0f} MiB   (goal < 60 s, < 2048 MiB)")
    print(f"  the same command again (unchanged, nothing rendered): {again:.1f} s")
    return db


def sample_sql(db: Path, n: int) -> tuple[str, Path]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    total = con.execute(f"SELECT n_stimuli FROM current_sets WHERE name = '{SET}'").fetchone()[0]
    step = max(1, total // n)
    sql = f"SELECT * FROM current_stimuli WHERE set_name = '{SET}' AND ordinal % {step} = 0"
    texts = [r[0] for r in con.execute(f"SELECT DISTINCT stimulus FROM ({sql})").fetchall()]
    con.close()
    path = db.parent / f"texts{n}.txt"
    path.write_text("\n".join(texts), encoding="utf-8")
    return sql, path


def encode_speed(folder: Path, db: Path, n: int, repeats: int) -> None:
    from stimkit.encoders.transformer import minilm_path

    sql, texts = sample_sql(db, n)
    count = len(texts.read_text(encoding="utf-8").split("\n"))
    step = sql.rsplit("% ", 1)[1].split()[0]
    raw_s, ours_s = [], []
    for r in range(repeats):  # alternated: the machine is shared
        raw_s.append(timed([sys.executable, "-c", RAW, minilm_path(), str(texts), "cpu", "float32", "64"])[0])
        fresh = folder / f"enc{r}.duckdb"
        shutil.copy(db, fresh)
        ours_s.append(timed(stimkit(fresh, "encode", "-e", "minilm", "--set", sql))[0])
        fresh.unlink()
    ratios = sorted(a / b for a, b in zip(raw_s, ours_s))
    print(f"encode {count:,} of its sentences (every {step}th: a sample) with MiniLM on CPU, whole processes, "
          f"{repeats} paired runs:")
    print(f"  raw forward    {count / min(raw_s):6.0f} texts/s  (s: {', '.join(f'{s:.1f}' for s in raw_s)})")
    print(f"  stimkit encode {count / min(ours_s):6.0f} texts/s  (s: {', '.join(f'{s:.1f}' for s in ours_s)})")
    print(f"  stimkit / raw: best {min(raw_s) / min(ours_s):.1%}, per pair {', '.join(f'{x:.1%}' for x in ratios)}"
          "   (goal >= 95%)")


MEMORY = """
import sys, duckdb, polars as pl
from stimkit import store
from stimkit.encoders import embeddings, resolve
source, db, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = duckdb.connect(source, read_only=True)
texts = [r[0] for r in con.execute("SELECT DISTINCT stimulus FROM current_stimuli ORDER BY 1 LIMIT ?", [n]).fetchall()]
con.close()
con = store.connect(db)
report = embeddings.encode_missing(con, resolve("minilm"), pl.DataFrame({"stimulus": texts}),
                                   progress=lambda done, total: print(done, flush=True))
print("encoded", report["encoded"], "cached", report["cached"], flush=True)
"""


def memory(folder: Path, db: Path, counts: list[int]) -> None:
    print("peak RSS of encoding N of its sentences with MiniLM (streamed: should not grow with N):")
    script = RSS.replace("runpy.run_module(sys.argv[0], run_name='__main__')", "exec(sys.argv[0])")
    for n in counts:
        seconds, output = timed([sys.executable, "-c", script, MEMORY, str(db), str(folder / f"m{n}.duckdb"), str(n)])
        print(f"  {n:>7,} texts  {seconds:6.1f} s  {n / seconds:5.0f} texts/s  peak RSS {peak(output):5.0f} MiB")


def resume(folder: Path, db: Path, n: int) -> None:
    """Kill an encode (SIGKILL) once it has committed some vectors, then run it again."""
    target = folder / "resume.duckdb"
    proc = subprocess.Popen([sys.executable, "-c", MEMORY, str(db), str(target), str(n)], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    committed = 0
    for line in proc.stdout:
        committed = int(line) if line.strip().isdigit() else committed
        if committed >= n // 4:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    output = timed([sys.executable, "-c", MEMORY, str(db), str(target), str(n)])[1]
    done = next(line.split() for line in output.splitlines() if line.startswith("encoded"))
    print(f"killed (SIGKILL) after {committed:,} of {n:,} vectors were committed; the next run encoded "
          f"{int(done[1]):,} and found {int(done[3]):,} stored ({int(done[1]) + int(done[3]):,} in all)")


def reads(folder: Path, db: Path, repeats: int = 3) -> None:
    # a result on the store, so `results` has rows to read (the word test, GloVe: seconds)
    timed(stimkit(db, "test", "weat1", "-e", "glove-6b-50d", "--budget", "10000"))
    commands = [["sets"], ["results"], ["query", "SELECT count(*) FROM current_stimuli"],
                ["query", "SELECT slot, count(*) FROM current_slot_stimuli GROUP BY slot"]]
    print(f"read commands on that store ({db.stat().st_size / 2**20:.0f} MiB), whole processes, best of {repeats}:")
    for args in commands:
        seconds = [timed(stimkit(db, *args, "--format", "csv"))[0] for _ in range(repeats)]
        print(f"  stimkit {' '.join(a if ' ' not in a else repr(a) for a in args):<75} {min(seconds):5.2f} s "
              f"(all: {', '.join(f'{s:.2f}' for s in seconds)})   goal < 1 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="HolisticBias's JSON files (tests/fixtures/holistic-bias)")
    parser.add_argument("--sample", type=int, default=10_000, help="sentences for the encode speed (every k-th)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory", default="1000,4000", help="sentence counts for the memory runs ('' to skip)")
    parser.add_argument("--skip-encode", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        db = generate(folder, args.dir.resolve())
        if not args.skip_encode:
            encode_speed(folder, db, args.sample, args.repeats)
            counts = [int(c) for c in args.memory.split(",") if c.strip()]
            if counts:
                memory(folder, db, counts)
                resume(folder, db, counts[-1])
        reads(folder, db)


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"({time.perf_counter() - started:.0f} s in all)")
