"""The views layer's writer: every table a command prints is a polars frame written through `emit`
(the views above it choose the columns, the cells' text and the captions; this module only
writes, in the format asked for, fitted to the terminal).

Formats (modelled on sqlite-utils and Datasette):
- machine formats carry full precision, every column by default, and nothing else on stdout:
  `csv`, `tsv` (a header, then
  one record per row, CSV quoting), `json` (ONE document: a list of row objects, or with
  `emit_document` an object whose "rows" hold them), `ndjson` (one row object per line).
  NaN and infinities are JSON null (csv/tsv keep `NaN`/`inf`, which CSV readers parse back);
  dates and times are ISO 8601 strings; list, array and struct cells (vectors) are JSON values,
  written as JSON text inside csv/tsv cells; binary is base64 text. `parquet` writes bytes (to a
  file or pipe; refused on a terminal).
- human formats show floats to 4 significant digits and a float vector as `[384 floats]`:
  `table` (rich; the default when stdout is a terminal, csv otherwise), `markdown` (GitHub
  pipes), `latex` (a booktabs tabular). Off a terminal a table has ASCII rules, never box drawing.
  A command may name the columns a person reads first (`columns`), the ones never dropped to
  fit the width (`keep`) and the ones dropped first (`drop_first`). On a narrow terminal the
  findings stay and the names fold (`_fit`): numbers and decisions are never cut, and never
  dropped while a name could fold instead.

Store data is never read as rich markup or emoji: table cells are rich Text objects, and the
consoles `out`/`err` interpret markup only where a caller asks (print(..., markup=True)).
Titles, row counts and notes about hidden columns go to stderr, except a table's own title.
"""

from __future__ import annotations

import json
import math
import numbers
import re
import sys
from dataclasses import dataclass
from typing import IO

from rich.console import Console

from ..errors import UsageError
from ..plain import Rows

FORMATS = ("table", "csv", "tsv", "json", "ndjson", "parquet", "markdown", "latex")
MACHINE_FORMATS = ("csv", "tsv", "json", "ndjson", "parquet")

# Tables printed to a file or pipe are as wide as their content: nothing hidden, nothing wrapped.
UNBOUNDED = 100_000
# A column of text (cells with spaces) may wrap, but not narrower than this (or its longest word).
MIN_TEXT_WIDTH = 20
# A column of names (no spaces: tests, encoders, set names) folds over lines this wide before
# any column with findings is dropped to make room, and to FOLD_WIDTH before a column a command
# drops first goes (see `_fit`).
NAME_WIDTH = 12
FOLD_WIDTH = 24


def make_console(stderr: bool = False, soft_wrap: bool = True, **kwargs) -> Console:
    """A console that prints strings as they are: no markup, no :emoji:, no highlighting, unless asked."""
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=soft_wrap, **kwargs)


def _stdout_is_terminal() -> bool:
    return bool(getattr(sys.stdout, "isatty", None)) and sys.stdout.isatty()


out = make_console(width=None if _stdout_is_terminal() else UNBOUNDED)
# Prose on a terminal wraps between words at its width (a legend of 200 characters reads as
# three lines, not as one the terminal cuts mid-word); to a file or pipe, a line stays a line.
err = make_console(stderr=True, soft_wrap=not (getattr(sys.stderr, "isatty", None) and sys.stderr.isatty()))


def default_format() -> str:
    """`table` when a person reads stdout (a terminal), `csv` when a program or file does."""
    return "table" if _stdout_is_terminal() else "csv"


def check_format(fmt: str | None, extra: tuple[str, ...] = ()) -> str:
    """The one place a format name is checked; None means `default_format()`."""
    if fmt is None:
        return default_format()
    name = fmt.strip().lower()
    if name not in FORMATS + extra:
        raise UsageError(f"unknown format {fmt!r} (known: {', '.join(FORMATS + extra)})")
    return name


# ---------------------------------------------------------------- emit

def emit(df, fmt: str | None = None, columns: list[str] | None = None, *, title: str | None = None,
         limit: int | None = None, more: int = 0, stream: IO[str] | None = None, width: int | None = None,
         notes: IO[str] | None = None, keep: tuple[str, ...] = (), drop_first: tuple[str, ...] = (),
         stack: dict[str, str] | None = None, order: tuple[str, ...] = ()) -> None:
    """Print a polars frame in one of FORMATS (None: `default_format()`), or plain.Rows as a
    table, csv, tsv, markdown or latex (the same text as the same rows in a frame).

    columns: the columns to show, in order (missing ones are skipped). limit: print the first
    `limit` rows and say on stderr how many more there are; `more` adds rows the caller already
    left out (e.g. a query fetched with LIMIT). stream: where data goes (stdout); width: the
    table width (the terminal's, or unbounded off a terminal); notes: where notes go (stderr).
    keep: columns a narrow table never drops (it folds long names instead); drop_first: the
    columns a narrow table drops first, in this order; stack: {column: under} for a column that
    a narrow table shows on a second line of another's cells rather than drop it; order: the
    columns by importance, most important first (a narrow table drops the columns it does not
    name first, from the right, then these from the last)."""
    fmt = check_format(fmt)
    _printable(df, fmt)  # before a title or note is printed
    df, more = _select(df, columns, limit, more)
    if fmt == "table":
        _print_table(_grid_from_frame(df), title, stream, width, notes, keep, drop_first, stack, order)
    elif fmt == "parquet":
        if title:
            _note(title, notes)
        _write_parquet(df, stream)
    else:
        if title:
            _note(title, notes)
        _write(render(df, fmt), stream)
    _note_more(more, notes)


def emit_document(meta: dict, df, fmt: str | None = None, columns: list[str] | None = None, *,
                  limit: int | None = None, more: int = 0, stream: IO[str] | None = None,
                  notes: IO[str] | None = None, **table) -> None:
    """A frame with metadata (e.g. a family's size): json prints ONE object {**meta, "rows": [...]};
    other formats print the metadata as `key: value` lines on stderr and the rows as `emit` does."""
    fmt = check_format(fmt)
    if "rows" in meta:
        raise ValueError("meta may not have a key 'rows': the rows go there")
    if fmt != "json":
        for key, value in meta.items():
            _note(f"{key}: {_display(value)}", notes)
        return emit(df, fmt, columns, limit=limit, more=more, stream=stream, notes=notes, **table)
    if table.get("title"):
        _note(table["title"], notes)
    df, more = _select(df, columns, limit, more)
    head = json.dumps(_finite(meta), default=_json_default, ensure_ascii=False)
    _write(head[:-1] + (", " if meta else "") + '"rows": ' + render(df, "json").rstrip("\n") + "}\n", stream)
    _note_more(more, notes)


def emit_tables(tables: dict, fmt: str | None = None, *, meta: dict | None = None, titles: dict[str, str] | None = None,
                options: dict[str, dict] | None = None, stream: IO[str] | None = None, notes: IO[str] | None = None) -> None:
    """A command's several tables ({name: frame}, the main one first), every one in every format:
    - json: ONE document {**meta, "rows": [the main table], name: [rows], ...} (as `emit_document`;
      `meta` is for json only: the other formats leave it to the command's prose);
    - csv, tsv: the tables one after another, each with its header line, a blank line between,
      each table's title on stderr before it;
    - ndjson: every table's rows, one object a line, each naming its table first ({"table": name, ...});
    - parquet: the tables' rows stacked, a `table` column first (a column a table lacks is null);
    - table, markdown, latex: one after another, a blank line between, each with its title.
    `options`: {name: emit's keyword arguments} (keep, drop_first, columns, ...) for a table."""
    import polars as pl

    fmt = check_format(fmt)
    titles, options = titles or {}, options or {}
    frames = {name: _select(df, options.get(name, {}).get("columns"), None, 0)[0] for name, df in tables.items()}
    if fmt == "json":
        doc = {**(meta or {})}
        if "rows" in doc or "rows" in list(frames)[1:]:
            raise ValueError("meta and the other tables may not be named 'rows': the main table goes there")
        parts = {("rows" if i == 0 else name): df for i, (name, df) in enumerate(frames.items())}
        head = json.dumps(_finite(doc), default=_json_default, ensure_ascii=False)[:-1]
        body = ", ".join(f'{json.dumps(key)}: {render(df, "json").rstrip()}' for key, df in parts.items())
        return _write(head + (", " if doc else "") + body + "}\n", stream)
    named = {name: _machine_frame(df).select(pl.lit(name).alias("table"), pl.all()) for name, df in frames.items()}
    if fmt == "ndjson":
        return _write("".join(render(df, "ndjson") for df in named.values()), stream)
    if fmt == "parquet":
        return _write_parquet(pl.concat(list(named.values()), how="diagonal_relaxed"), stream)
    for i, (name, df) in enumerate(frames.items()):
        if i:
            _write("\n", stream)
        extra = {k: v for k, v in options.get(name, {}).items() if k != "columns"}
        emit(df, fmt, title=titles.get(name, name), stream=stream, notes=notes, **extra)


def print_rows(rows: list[dict], columns: list[str], title: str | None = None, *, stream: IO[str] | None = None,
               width: int | None = None, notes: IO[str] | None = None, keep: tuple[str, ...] = (),
               order: tuple[str, ...] = ()) -> None:
    """A table of plain rows (dicts whose values need not share a type per column)."""
    _print_table(_grid_from_rows(rows, columns), title, stream, width, notes, keep, order=order)


def _write_parquet(df, stream) -> None:
    """Parquet is bytes: to a file or pipe (stdout's binary buffer), never onto a terminal."""
    import io

    target = stream or sys.stdout
    if stream is None and _stdout_is_terminal():
        raise UsageError("--format parquet writes bytes: redirect stdout to a file (> results.parquet)")
    buf = io.BytesIO()
    _machine_frame(df).write_parquet(buf)
    target.flush()
    getattr(target, "buffer", target).write(buf.getvalue())


def render(df, fmt: str) -> str:
    """A frame as text in a non-table format (what `emit` writes)."""
    fmt = check_format(fmt)
    if fmt == "markdown":
        return _markdown(_grid_from_frame(df))
    if fmt == "latex":
        return _latex(_grid_from_frame(df))
    if fmt in ("table", "parquet"):
        raise ValueError(f"render {fmt} with emit")
    if isinstance(df, Rows):
        _printable(df, fmt)
        return _csv_from_rows(df, "," if fmt == "csv" else "\t")
    df = _machine_frame(df)
    if fmt == "json":
        return df.write_json() + "\n"
    if fmt == "ndjson":
        return df.write_ndjson()
    return _nested_as_json_text(df).write_csv(separator="," if fmt == "csv" else "\t")


def _printable(df, fmt: str) -> None:
    """plain.Rows print as text a person reads or csv/tsv; json, ndjson and parquet take a frame."""
    if isinstance(df, Rows) and fmt in ("json", "ndjson", "parquet"):
        raise ValueError(f"plain.Rows print as table, csv, tsv, markdown or latex, not {fmt}: read a polars frame")


def _select(df, columns, limit, more):
    """The chosen columns and the first `limit` rows; `more` counts the rows left out."""
    if columns:
        df = df.select([c for c in columns if c in df.columns])
    if limit is not None and df.height > limit:
        return df.head(limit), more + df.height - limit
    return df, more


def _note_more(more: int, notes: IO[str] | None) -> None:
    if more:
        _note(f"{more} more row{'' if more == 1 else 's'}", notes)


def _write(text: str, stream: IO[str] | None) -> None:
    (stream or sys.stdout).write(text)


def _note(text: str, notes: IO[str] | None) -> None:
    stream = notes or sys.stderr
    if getattr(stream, "isatty", None) and stream.isatty():  # a terminal: wrapped between words at its width
        import shutil
        import textwrap

        text = "\n".join(textwrap.fill(line, shutil.get_terminal_size().columns) for line in text.split("\n"))
    stream.write(text + "\n")


# ---------------------------------------------------------------- machine formats

def _machine_frame(df):
    """Columns JSON and CSV writers cannot take, or would write ambiguously, as plain values."""
    import polars as pl

    exprs = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if isinstance(dtype, pl.Decimal):
            col = col.cast(pl.Float64)
        elif isinstance(dtype, (pl.Datetime, pl.Duration)):
            col = col.dt.to_string("iso:strict" if isinstance(dtype, pl.Datetime) else "iso")
        elif isinstance(dtype, pl.Binary):
            col = col.bin.encode("base64")
        elif isinstance(dtype, pl.Object):
            col = col.map_elements(str, return_dtype=pl.String)
        exprs.append(col.alias(name))
    return df.select(exprs)


def _nested_as_json_text(df):
    """List, array and struct cells as JSON text for csv/tsv (null stays an empty cell)."""
    import polars as pl

    def as_json(name):
        encoded = pl.struct(pl.col(name).alias("v")).struct.json_encode()
        text = encoded.str.strip_prefix('{"v":').str.strip_suffix("}")
        return pl.when(pl.col(name).is_null()).then(None).otherwise(text).alias(name)

    nested = [n for n, t in df.schema.items() if t.is_nested()]
    return df.with_columns(as_json(n) for n in nested) if nested else df


def _csv_from_rows(rows: Rows, sep: str) -> str:
    """plain.Rows as polars' write_csv writes the same rows in a frame, byte for byte (a test
    holds the two together): a null as an empty cell, an empty string as "", true/false,
    floats as `polars_float`, times as ISO 8601 to the microsecond, lists as compact JSON, a
    cell quoted where it holds the separator, a quote or a line break."""
    def cell(value, type_: str) -> str:
        if value is None:
            return ""
        if type_ == "DOUBLE":
            return polars_float(value)
        if type_ == "BOOLEAN":
            return "true" if value else "false"
        if type_ == "TIMESTAMP":
            return value.isoformat(timespec="microseconds")
        if type_.endswith("[]"):
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            text = str(value)
        if text == "" or sep in text or any(c in text for c in '"\n\r'):
            return '"' + text.replace('"', '""') + '"'
        return text

    lines = [sep.join(cell(c, "VARCHAR") for c in rows.columns)]
    lines += [sep.join(cell(v, t) for v, t in zip(row, rows.types)) for row in rows.rows]
    return "\n".join(lines) + "\n"


def polars_float(x: float) -> str:
    """A float as polars writes it in csv: its shortest round-trip digits (Python's repr), in
    positional notation from 1e-5 up to 1e16 and in scientific notation (`1.5e-7`, `1e+16`)
    outside; `NaN`, `inf`, `-inf`."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(x)
    sign, text = ("-", text[1:]) if text.startswith("-") else ("", text)
    mantissa, _, exp = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0").rstrip("0")
    if not digits:
        return sign + "0.0"
    # the power of ten of the first significant digit
    if whole.strip("0"):
        power = len(whole.lstrip("0")) - 1 + int(exp or 0)
    else:
        power = -(len(fraction) - len(fraction.lstrip("0"))) - 1 + int(exp or 0)
    if -5 <= power < 16:
        if power >= 0:
            return f"{sign}{digits[:power + 1].ljust(power + 1, '0')}.{digits[power + 1:] or '0'}"
        return f"{sign}0.{'0' * (-power - 1)}{digits}"
    return f"{sign}{digits[0]}{'.' + digits[1:] if len(digits) > 1 else ''}e{'+' if power >= 0 else '-'}{abs(power)}"


def _finite(value):
    """NaN and infinities as None, through dicts and lists (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_default(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return _finite(value.tolist())
    return str(value)


# ---------------------------------------------------------------- human formats

@dataclass
class _Grid:
    """A frame as display strings: what table, markdown and latex print."""

    columns: list[str]
    rows: list[list[str]]
    numeric: list[bool]  # right-aligned
    vector: list[bool]   # float vectors, shown as `[N floats]`


def _display(value) -> str:
    """One cell for people: floats to 4 significant digits, float vectors as `[N floats]`, blobs as `[N bytes]`."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        value = float(value)
        return "NaN" if math.isnan(value) else f"{value:.4g}"
    if hasattr(value, "tolist") and not isinstance(value, str):  # numpy arrays and scalars
        return _display(value.tolist())
    if isinstance(value, (list, tuple)):
        if _is_float_vector(value):
            return f"[{len(value)} floats]"
        return json.dumps(_finite(list(value)), default=_json_default, ensure_ascii=False)
    if isinstance(value, dict):
        return json.dumps(_finite(value), default=_json_default, ensure_ascii=False)
    if isinstance(value, bytes):
        return f"[{len(value)} bytes]"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _is_float_vector(values) -> bool:
    real = [v for v in values if v is not None]
    return bool(real) and all(isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) for v in real)


def _grid_from_frame(df) -> _Grid:
    if isinstance(df, Rows):
        return _grid_from_plain(df)
    import polars as pl

    def float_vector(dtype):
        return isinstance(dtype, (pl.List, pl.Array)) and dtype.inner.is_float()

    vector = [float_vector(t) for t in df.schema.values()]
    # Count vector lengths in polars rather than pulling every float into Python.
    shown = df.with_columns(
        pl.when(pl.col(n).is_null()).then(None)
        .otherwise(pl.format("[{} floats]", pl.col(n).cast(pl.List(t.inner)).list.len())).alias(n)
        for (n, t), v in zip(df.schema.items(), vector) if v)
    rows = [[_display(v) for v in row] for row in shown.iter_rows()]
    numeric = [t.is_numeric() for t in df.schema.values()]
    return _Grid(list(df.columns), rows, numeric, vector)


# DuckDB's numeric types among store.PLAIN_TYPES (right-aligned in a table, as polars' numeric dtypes)
_NUMERIC = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
                      "DOUBLE"})


def _grid_from_plain(rows: Rows) -> _Grid:
    """plain.Rows as the grid of the same rows in a frame (PLAIN_TYPES hold no float vectors)."""
    cells = [[_display(v) for v in row] for row in rows.rows]
    return _Grid(list(rows.columns), cells, [t in _NUMERIC for t in rows.types], [False] * len(rows.columns))


def _grid_from_rows(rows: list[dict], columns: list[str]) -> _Grid:
    values = [[r.get(c) for c in columns] for r in rows]
    cells = [[_display(v) for v in row] for row in values]

    def kind(i, test):
        present = [row[i] for row in values if row[i] is not None]
        return bool(present) and all(test(v) for v in present)

    numeric = [kind(i, lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool)) for i in range(len(columns))]
    vector = [kind(i, lambda v: isinstance(v, (list, tuple)) and _is_float_vector(v)) for i in range(len(columns))]
    return _Grid(list(columns), cells, numeric, vector)


def markdown_escape(text) -> str:
    """A GitHub table cell: `|` and `*` escaped (marks like ** stay literal), line breaks as <br>."""
    return (str(text).replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
            .replace("\r\n", "<br>").replace("\n", "<br>"))


def _markdown(grid: _Grid) -> str:
    """A GitHub table."""
    cell = markdown_escape
    lines = ["| " + " | ".join(cell(c) for c in grid.columns) + " |",
             "|" + "|".join("---:" if n else "---" for n in grid.numeric) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in grid.rows]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "\n": " ", "\r": "",
                  # what pdflatex's utf8 input cannot set, and the comparison people type
                  "<=": r"$\leq$", ">=": r"$\geq$", "≤": r"$\leq$", "≥": r"$\geq$", "†": r"$^{\dagger}$",
                  "✓": r"$\surd$", "✗": r"$\times$", "▲": r"$\triangle$", "²": r"\textsuperscript{2}",
                  "τ": r"$\tau$", "±": r"$\pm$", "−": "-", "<": r"\textless{}", ">": r"\textgreater{}"}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in sorted(_LATEX_SPECIAL, key=len, reverse=True)))


def latex_escape(text) -> str:
    """Text as LaTeX typesets it literally (one pass, so inserted braces are not escaped again);
    the one LaTeX escaper of stimkit (tables, report, paper tables)."""
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group()], str(text))


def _latex(grid: _Grid) -> str:
    """A booktabs tabular (needs \\usepackage{booktabs})."""
    def line(cells):
        return " & ".join(latex_escape(c) for c in cells) + r" \\"

    spec = "".join("r" if n else "l" for n in grid.numeric)
    body = [line(row) for row in grid.rows]
    return "\n".join([rf"\begin{{tabular}}{{{spec}}}", r"\toprule", line(grid.columns), r"\midrule",
                      *body, r"\bottomrule", r"\end{tabular}"]) + "\n"


# ---------------------------------------------------------------- table

def _print_table(grid: _Grid, title: str | None, stream: IO[str] | None, width: int | None,
                 notes: IO[str] | None, keep_names: tuple[str, ...] = (), drop_first: tuple[str, ...] = (),
                 stack: dict[str, str] | None = None, order: tuple[str, ...] = ()) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    if stream is None and width is None:
        console = out
    else:
        console = make_console(file=stream, width=width or (UNBOUNDED if stream else out.width))
    available = console.width
    def fit(grid):  # a stacked column ("d\nci") is known by its first name
        named = [c.split("\n")[0] for c in grid.columns]
        return _fit(grid, available, [named.index(c) for c in keep_names if c in named],
                    [named.index(c) for c in drop_first if c in named], [named.index(c) for c in order if c in named])

    # an interval's upper end goes under its lower end rather than away (ci_high under ci_low)
    stack = {**{c: c[:-5] + "_low" for c in grid.columns if c.endswith("_high") and c[:-5] + "_low" in grid.columns},
             **(stack or {})}
    rank = {c: i for i, c in enumerate(order)}

    def loss(grid, keep) -> list[float]:  # the hidden columns' ranks, most important first
        return sorted(rank.get(name, len(order)) for i, c in enumerate(grid.columns) if i not in keep
                      for name in c.split("\n"))

    def better(new, old) -> bool:  # fewer hidden, or a less important one, where they first differ
        size = max(len(new), len(old)) + 1
        return [*new, *[math.inf] * (size - len(new))] > [*old, *[math.inf] * (size - len(old))]

    keep, widths = fit(grid)
    best = (grid, keep, widths)
    for _ in range(len(stack)):
        # what would be left out goes on a second line of its partner's cells instead; and where a
        # column the view ranks would be left out, a column that can go under another does so (in
        # the order `stack` lists them) to make room, one after another while no more is left out;
        # the table shown is the first of these that leaves out least
        hidden = [c for i, c in enumerate(grid.columns) if i not in keep]
        if not hidden:
            break
        shown = {c.split("\n")[0] for i, c in enumerate(grid.columns) if i in keep}
        movable = [(c, u) for c, u in stack.items() if c in grid.columns and u in shown]
        ranked_hidden = any(name in rank for c in hidden for name in c.split("\n"))
        candidates = [(c, u) for c, u in movable if c in hidden] + \
                     ([(c, u) for c, u in movable if c not in hidden] if ranked_hidden else [])
        for column, under in candidates:
            trial = _stacked(grid, {column: under})
            trial_keep, trial_widths = fit(trial)
            if not better(loss(grid, keep), loss(trial, trial_keep)):  # no more left out
                grid, keep, widths = trial, trial_keep, trial_widths
                if better(loss(grid, keep), loss(best[0], best[1])):
                    best = (grid, keep, widths)
                break
        else:
            break
    grid, keep, widths = best
    hidden = [name for i, c in enumerate(grid.columns) if i not in keep for name in c.split("\n")]
    if hidden:
        _note(f"{len(hidden)} column{'' if len(hidden) == 1 else 's'} not shown to fit {available} characters "
              f"(a wider terminal or another --format shows them): {', '.join(hidden)}", notes)
    # box-drawing characters only for a person at a terminal; a file or pipe gets ASCII rules
    rules = box.HEAVY_HEAD if console.is_terminal else box.ASCII
    table = Table(title=Text(title) if title else None, box=rules, header_style="bold")
    for i in keep:  # a header folds as a name does (at its `_`)
        table.add_column(Text(_fold(grid.columns[i], widths[i])), width=widths[i], overflow="fold",
                         justify="right" if grid.numeric[i] else "left")
    for row in grid.rows:
        table.add_row(*(Text(_fold(row[i], widths[i]) if row[i] != "" else EMPTY) for i in keep))
    console.print(table, soft_wrap=False, crop=False)


# An empty cell in a table a person reads: a dash, so that a blank is never taken for a lost value.
EMPTY = "-"


def _stacked(grid: _Grid, stack: dict[str, str]) -> _Grid:
    """`grid` with each column of `stack` moved under its partner: header "d\nci", cells "1.71\n[1.37, 1.82]"."""
    columns, rows = list(grid.columns), [list(r) for r in grid.rows]
    for column, under in stack.items():  # the partner may be stacked already ("d\nci"): known by its first name
        i, j = columns.index(column), [c.split("\n")[0] for c in columns].index(under)
        columns[j] = f"{under}\n{column}"
        for row in rows:
            row[j] = f"{row[j]}\n{row[i]}" if row[i] else row[j]
    gone = {columns.index(c) for c in stack}
    pick = lambda values: [v for k, v in enumerate(values) if k not in gone]  # noqa: E731
    return _Grid(pick(columns), [pick(r) for r in rows], pick(grid.numeric), pick(grid.vector))


def _overhead(n_columns: int) -> int:
    """Borders and padding of a boxed rich table: one space each side of a cell, n + 1 rules."""
    return 3 * n_columns + 1


# Where a folded name or header may break: after one of these or a space, or before an @
# (a set's template stays with it: "pleasant" / "@may2019").
_PIECE = re.compile(r"@?[^_\-@/,=:~\s]*(?:[_\-/,=:~]|\s+)?")
# A cell of figures (sizes "24/24/25/25", "+1.71**^ [1.37, 1.82]", "<= 5e-06", "+0.4*✓"): a finding, never cut.
_FIGURES = re.compile(r"[-+−\d.,:;/*†^✓✗▲<=>%()\[\]eE ]*\d[-+−\d.,:;/*†^✓✗▲<=>%()\[\]eE ]*")


def _pieces(text: str) -> list[str]:
    """`text` cut after each break character or run of spaces: the units a fold keeps whole.
    A number is never parted: not from its sign ("[-" / "0.11" is one unit, "[-0.11,"), and
    not at a `/` or `,` between digits ("40/40/40/40", "1,000")."""
    units: list[str] = []
    done = ""  # the text before `piece`
    for piece in (p for p in _PIECE.findall(text) if p):
        last = units[-1] if units else ""
        before = done[-2:-1]  # the character before `last`'s final one
        sign = last[-1:] in ("-", "+", "−") and not before.isalnum()  # "[-0.11", "d=-0.11"; not "glove-6b"
        between = last[-1:] in ("/", ",", ".", ":") and before.isdigit()  # "40/40", "1,000"
        exponent = re.search(r"\d[eE][-+]$", last) is not None  # "1e-06"
        if last and (piece[:1].isdigit() or piece[:1] == ".") and (sign or between or exponent):
            units[-1] = last + piece
        else:
            units.append(piece)
        done += piece
    return units


def _widest(cells) -> int:
    """The widest unit of `cells` (`_pieces`): how narrow a column can be with none of them cut."""
    from rich.cells import cell_len

    return max((cell_len(p.rstrip()) for c in cells for line in c.splitlines() for p in _pieces(line)),
               default=0)


def _fold(text: str, width: int) -> str:
    """Each line of `text` wrapped to `width` after `_ - / , = : ~` or a space, or before an `@`,
    never inside a number ("+0.73* [-0.11, 1.23]" never parts a sign from its number: `_pieces`),
    and cut inside a piece only where the piece alone is wider (`_fit` makes a column no
    narrower than its widest piece where it can):
    "european_american_names@may2019" at 12 is "european_\namerican_\nnames\n@may2019"."""
    from rich.cells import cell_len

    lines = []
    for line in text.split("\n"):
        if cell_len(line) <= width:
            lines.append(line)
            continue
        current = ""
        for piece in _pieces(line):
            if current and cell_len(current + piece.rstrip()) > width:
                lines.append(current.rstrip())
                current = ""
            while cell_len(piece.rstrip()) > width:  # one piece wider than the column: cut it
                lines.append(piece[:width])
                piece = piece[width:]
            current += piece
        lines.append(current.rstrip())
    return "\n".join(lines)


def _kinds(grid: _Grid) -> list[str]:
    """Each column's kind: `number` (numeric values), `decision` (true/false throughout),
    `figures` (text of figures: sizes, a d with its interval), `text` (cells with spaces) or
    `name` (the rest: tests, encoders, sets). Numbers, decisions and figures are findings."""
    kinds = []
    for i in range(len(grid.columns)):
        cells = [row[i] for row in grid.rows if row[i] != ""]
        if grid.numeric[i]:
            kinds.append("number")
        elif cells and all(c in ("true", "false") for c in cells):
            kinds.append("decision")
        elif cells and not grid.vector[i] and all(_FIGURES.fullmatch(line) for c in cells for line in c.split("\n")):
            kinds.append("figures")
        elif any(any(ch.isspace() for ch in c.strip()) for c in cells):
            kinds.append("text")
        else:
            kinds.append("name")
    return kinds


def _fit(grid: _Grid, available: int, protected: list[int] = (), drop_first: list[int] = (),
         order: list[int] = ()) -> tuple[list[int], dict[int, int]]:
    """Which columns to show and how wide, so that the findings stay and no number is cut.

    A table too wide gives way in this order: (1) the columns that say least go: all empty,
    names or text with one value throughout, float vectors (while the names are still whole),
    then the command's `drop_first` (while the names would fold to more than FOLD_WIDTH);
    (2) names fold over lines (after `_ - / , = : ~`, before `@`) down to NAME_WIDTH, text wraps at
    spaces down to MIN_TEXT_WIDTH, and the headers of findings fold at their `_`; (3) only then
    do columns go by importance: first those `order` does not name, from the right (a command
    lists its columns in the order a person reads them), then, once names and text have
    folded down to their widest piece or word, those it names, the least important first;
    never the first or a `keep` (`protected`) one; (4) names and text fold that far; (5) a `keep` column goes, the least important
    first, rather than a number be cut. A cell of numbers or figures is never narrower than its
    widest token: it wraps only at a space between whole tokens. The widest column that may
    still fold gives way first, one character at a time."""
    from rich.cells import cell_len

    kinds = _kinds(grid)
    natural, tight, floor = [], [], []
    for i, name in enumerate(grid.columns):
        cells = [row[i] for row in grid.rows]
        natural.append(max((cell_len(line) for t in [name, *cells] for line in t.splitlines() or [""]), default=0))
        header = _widest([name])
        if kinds[i] in ("number", "decision"):  # values whole, the header folds at its _
            least = lowest = max([header] + [cell_len(line) for c in cells for line in c.splitlines()])
        elif kinds[i] == "figures":  # a figure whole, lines break between figures
            least = lowest = max(header, _widest(cells))
        elif kinds[i] == "text":
            lowest = max(header, _widest(cells))
            least = max(lowest, min(natural[i], MIN_TEXT_WIDTH))
        else:  # a name: never cut inside a piece where the column can be as wide as the piece
            lowest = max(header, _widest(cells))
            least = max(lowest, min(natural[i], max(header, NAME_WIDTH)))
        tight.append(min(least, natural[i]))
        floor.append(min(lowest, natural[i]))
    # (1) is judged with headers and figures whole, text wrapped and names whole (say-little
    # columns) or folded to FOLD_WIDTH (the command's drop_first); (2) and (3) with everything folded
    header = [max((cell_len(line) for line in c.splitlines()), default=0) for c in grid.columns]
    whole = [natural[i] if kinds[i] in ("name", "figures") else max(tight[i], min(natural[i], header[i]))
             for i in range(len(kinds))]
    roomy = [min(whole[i], max(FOLD_WIDTH, tight[i])) if kinds[i] == "name" else whole[i] for i in range(len(kinds))]
    stays = {0, *protected}

    def needed(cols, widths):
        return sum(widths[i] for i in cols) + _overhead(len(cols))

    keep = list(range(len(grid.columns)))
    cells = [[row[i] for row in grid.rows] for i in keep]
    empty = [i for i in keep if all(c == "" for c in cells[i])]
    constant = [i for i in keep if len(grid.rows) > 1 and len(set(cells[i])) == 1 and i not in empty
                and kinds[i] in ("name", "text")]  # a finding says something even when it is the same throughout
    vectors = [i for i in keep if grid.vector[i] and i not in empty + constant]
    for widths, gone in ((whole, [*empty, *constant, *vectors]), (roomy, drop_first)):
        for i in dict.fromkeys(i for i in gone if i not in stays):
            if needed(keep, widths) <= available:
                break
            if i in keep:
                keep.remove(i)
    ranked = list(dict.fromkeys(i for i in order if i in keep))  # most important first
    by_importance = [i for i in reversed(keep) if i not in ranked] + list(reversed(ranked))  # least first

    def fold_to_floor(kinds_folding=("name", "text", "figures")):
        """The widest name or text (or figures) gives way, down to its widest piece or word."""
        while needed(keep, tight) > available:
            foldable = [i for i in keep if tight[i] > floor[i] and kinds[i] in kinds_folding]
            if not foldable:
                break
            tight[max(foldable, key=lambda i: tight[i])] -= 1

    for i in by_importance:
        if i in ranked:  # a column the command ranks goes only once names and text have folded all they can
            fold_to_floor(("name", "text"))  # (figures stay on one line where a column could go instead)
        if needed(keep, tight) <= available:
            break
        if i not in stays:
            keep.remove(i)
    fold_to_floor()  # what must stay folds
    for i in by_importance:  # rather than cut a number, a column that was to stay goes
        if needed(keep, tight) <= available:
            break
        if i in keep and i != 0:
            keep.remove(i)
    widths = {i: natural[i] for i in keep}
    excess = sum(widths.values()) + _overhead(len(keep)) - available
    while excess > 0:  # narrow the widest column that may still fold, one character at a time: names and
        # text down to their usual width, then down to their widest piece, and only then figures
        wrappable = ([i for i in keep if widths[i] > tight[i] and kinds[i] != "figures"]
                     or [i for i in keep if widths[i] > max(floor[i], 1) and kinds[i] in ("name", "text")]
                     or [i for i in keep if widths[i] > tight[i]])
        if not wrappable:
            break
        widest = max(wrappable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    if excess > 0 and len(keep) == 1:  # a lone column wider than the screen folds
        widths[keep[0]] = max(1, available - _overhead(1))
    return keep, widths
