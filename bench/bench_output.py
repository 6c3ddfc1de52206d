"""How long the output layer takes to print a store-sized frame in each format, and to import.

    python bench/bench_output.py [ROWS]      (default 10,000 rows)
The frame is what `query "SELECT * FROM stimulus_vectors"` returns: names, text, a date and a
FLOAT[384] vector per row. Table formats are printed with --limit 100, as `query` does.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time


def frame(rows: int):
    import duckdb

    return duckdb.sql(f"""
        SELECT 'set-' || (i % 50) AS set_name, 'stimulus number ' || i || ' | with, "quotes"' AS stimulus,
               DATE '2024-01-01' + (i % 365)::INT AS created, i / 7.0 AS score,
               list_transform(range(384), lambda k: ((i * 384 + k) % 1000 / 1000.0)::FLOAT)::FLOAT[384] AS vector
        FROM range({rows}) t(i)""").pl()


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import stimkit.views.emit"], check=True)
    imported = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.perf_counter() - started
    print(f"import stimkit.views.emit: {imported * 1000:.0f} ms (python -c pass: {bare * 1000:.0f} ms)")

    from stimkit.views import emit as output

    df = frame(rows)
    print(f"{rows:,} rows x {df.width} columns (FLOAT[384] vectors)")
    for fmt in output.FORMATS:
        limit = 100 if fmt in ("table", "markdown", "latex") else None
        sink, notes = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        output.emit(df, fmt, limit=limit, stream=sink, notes=notes, width=120)
        seconds = time.perf_counter() - started
        size = len(sink.getvalue())
        shown = f"{limit} rows" if limit else "all rows"
        print(f"{fmt:>9}: {seconds * 1000:8.1f} ms  {size / 1e6:7.2f} MB  ({shown})")


if __name__ == "__main__":
    main()
