"""Commands over the embedding store: encode, encoders (parse, call the library, print)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..choices import ENGINES, check_choice, choices
from .common import app, emit, err, format_option, handles_errors, open_store


@app.command("encode")
@handles_errors
def encode_cmd(
    encoder: Annotated[list[str], typer.Option("--encoder", "-e", help="Encoder spec (repeatable), e.g. minilm,pooling=cls.")],
    sets: Annotated[Optional[list[str]], typer.Option("--set", help="Stimulus set name or SQL (repeatable).")] = None,
    tests: Annotated[Optional[list[str]], typer.Option("--test", help="Catalog test (repeatable).")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every current stimulus.")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Texts handed to the encoder at a time "
                                            "(a transformer sorts them by length and batches by batch_tokens= inside).")] = 4096,
    engine: Annotated[str, typer.Option("--engine", help=f"{choices(ENGINES)} (ray: a Ray cluster: RAY_ADDRESS, else a local one).")] = "local",
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Ray: model replicas (default: one per GPU, else one per CPU).")] = None,
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Encode stimuli into the embedding store; only what is missing, committing as it goes.

    Examples:
      stimkit encode -e minilm,pooling=cls --test sent-weat1
      stimkit encode -e hf:bert-base-uncased,pooling=token,device=cuda,dtype=bfloat16 --all
      stimkit encode -e minilm --all --engine ray
    """
    import polars as pl

    check_choice(engine, ENGINES, "--engine", "engine")
    with open_store() as store:
        reports = store.encode(encoder, sets, tests, everything, batch_size, progress_for, engine, workers)
    for r in reports:
        for note, n in r["notes"]:
            err.print(f"{r['encoder']}: note: {note} ({n} texts)", highlight=False)
    emit(pl.DataFrame([{k: v for k, v in r.items() if k != "notes"} for r in reports]), fmt)


def progress_for(enc):
    """A progress callback for one encoder: a bar on a terminal (stderr), nothing otherwise."""
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    if not err.is_terminal:
        return None
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                   TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(), console=err, transient=True)
    task = bar.add_task(f"encode {enc.spec}", total=None, rate="")
    started = time.perf_counter()

    def tick(done, total):  # from the encode's start (0 of N): an encoder with nothing to encode shows no bar
        bar.update(task, completed=done, total=total, rate=f"{done / max(time.perf_counter() - started, 1e-9):,.0f}/s")
        if not bar.live.is_started and done < total:
            bar.start()
        if done >= total:
            bar.stop()

    return tick


@app.command("encoders")
@handles_errors
def encoders_cmd(fmt: Annotated[Optional[str], format_option()] = None):
    """List the embedded encoders and every encoder with vectors in the store.

    Also: hf:<model id or path>, vectors:<word2vec/GloVe file>, import:<parquet/csv>; options as ,key=value.

    Example: stimkit encoders --format csv
    """
    with open_store(read_only=True) as store:
        emit(store.encoders(), fmt)
