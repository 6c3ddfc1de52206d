"""Commands over the embedding store: encode, encoders."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .. import StimkitError, catalog, embeddings, encoders, store
from .common import app, err, handles_errors, open_store, out, print_rows


def select_stimuli(con, sets: list[str] | None, tests: list[str] | None, everything: bool):
    """The stimuli named by --set / --test / --all, as one frame."""

    if everything:
        return catalog.fetch(con, "SELECT * FROM current_stimuli", "all stimuli")
    frames = []
    for name in sets or []:
        frames.append(catalog.fetch(con, catalog.set_sql(name), f"set {name!r}"))
    for name in tests or []:
        test = catalog.get(con, name)
        frames += list(catalog.fetch_sets(con, test).values())
    if not frames:
        raise StimkitError("say what to encode: --set NAME, --test NAME or --all")
    return embeddings.stimuli_of(frames)


def encode_with_progress(con, enc, stimuli, batch_size: int, engine: str = "local", workers: int | None = None) -> dict:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn()]
    with Progress(*columns, console=err, disable=not err.is_terminal, transient=True) as bar:
        task = bar.add_task(f"encode {enc.spec}", total=None, rate="")
        started = [None]

        def tick(done, total):
            import time
            started[0] = started[0] or time.perf_counter()
            elapsed = max(time.perf_counter() - started[0], 1e-9)
            bar.update(task, completed=done, total=total, rate=f"{done / elapsed:,.0f}/s")

        return embeddings.encode_missing(con, enc, stimuli, batch_size, tick, engine=engine, workers=workers)


@app.command("encode")
@handles_errors
def encode_cmd(
    encoder: Annotated[list[str], typer.Option("--encoder", "-e", help="Encoder spec (repeatable), e.g. minilm,pooling=cls.")],
    sets: Annotated[Optional[list[str]], typer.Option("--set", help="Stimulus set name or SQL (repeatable).")] = None,
    tests: Annotated[Optional[list[str]], typer.Option("--test", help="Catalog test (repeatable).")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every current stimulus.")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Texts handed to the encoder at a time "
                                            "(a transformer sorts them by length and batches by batch_tokens= inside).")] = 4096,
    engine: Annotated[str, typer.Option("--engine", help="local, or ray: a Ray cluster (RAY_ADDRESS, else a local one).")] = "local",
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Ray: model replicas (default: one per GPU, else one per CPU).")] = None,
):
    """Encode stimuli into the embedding store; only what is missing, committing as it goes."""
    encs = [encoders.resolve(spec) for spec in encoder]  # every spec checked before anything is written
    con = open_store()
    stimuli = select_stimuli(con, sets, tests, everything)
    for enc in encs:
        r = encode_with_progress(con, enc, stimuli, batch_size, engine, workers)
        rate = f", {r['encoded'] / r['seconds']:,.0f}/s" if r["encoded"] and r["seconds"] > 0 else ""
        out.print(f"{r['encoder']:<40} {r['fingerprint']}  {r['wanted']} texts: {r['cached']} cached, "
                  f"{r['encoded']} encoded in {r['seconds']:.1f}s{rate}", highlight=False)
        notes = store.rows(con, f"SELECT note, count(*) FROM {embeddings.vector_table(enc.dim)} "
                                "WHERE fingerprint = ? AND note IS NOT NULL GROUP BY note ORDER BY 2 DESC LIMIT 5", [r["fingerprint"]])
        for note, n in notes:
            out.print(f"  note: {note} ({n} texts)", highlight=False)


@app.command("encoders")
@handles_errors
def encoders_cmd():
    """List the embedded encoders and every encoder with vectors in the store."""
    con = open_store()
    stored = store.rows(con, "SELECT fingerprint, spec, dim, vector_table FROM encoders ORDER BY created_at")
    rows = []
    for fp, spec, dim, table in stored:
        n, nulls = store.one(con, f"SELECT count(*), count(*) - count(vector) FROM {table} WHERE fingerprint = ?", [fp])
        rows.append({"encoder": spec, "fingerprint": fp, "dim": dim, "vectors": n, "no vector (OOV)": nulls})
    listed = {r["encoder"].split(",")[0] for r in rows}
    dims = {"glove-6b-50d": 50, "minilm": 384, "use-m3": 512}
    for name in encoders.EMBEDDED:
        if name not in listed:
            rows.append({"encoder": name, "fingerprint": "", "dim": dims[name], "vectors": 0, "no vector (OOV)": 0})
    print_rows(rows, ["encoder", "fingerprint", "dim", "vectors", "no vector (OOV)"])
    out.print("also: hf:<model id or path>, vectors:<word2vec/GloVe file>, import:<parquet/csv>; options as ,key=value")


