"""`stimkit train`: embeddings trained on a corpus, a family of replicates (parse, call the library, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import app, emit, err, format_option, handles_errors, open_store


@app.command("train")
@handles_errors
def train_cmd(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Corpus files or folders, read as `stimkit import corpus` reads them (text, .jsonl, .parquet, .gz; a folder recursively).")] = None,
    name: Annotated[str, typer.Option("--name", help="The family's name: its replicates are the encoders trained:NAME/seed-K and trained:NAME/boot-K.")] = ...,
    corpus: Annotated[Optional[str], typer.Option("--corpus", help="Train on a corpus imported with `stimkit import corpus --name NAME` (its files are read again) instead of FILES.")] = None,
    method: Annotated[str, typer.Option("--method", help="word2vec or fasttext (gensim; skip-gram with negative sampling).")] = "word2vec",
    seeds: Annotated[int, typer.Option("--seeds", help="Replicates on the same documents with gensim's seeds 0..S-1.")] = 10,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Replicates on the documents resampled with replacement (Antoniak & Mimno 2018), each trained with seed 0.")] = 0,
    dim: Annotated[int, typer.Option("--dim", help="Vector dimensions.")] = 100,
    window: Annotated[int, typer.Option("--window", help="Context window (words each side).")] = 5,
    min_count: Annotated[int, typer.Option("--min-count", help="Words seen fewer times are left out of the vocabulary.")] = 5,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the corpus.")] = 10,
    resample_seed: Annotated[int, typer.Option("--resample-seed", help="Seed of the bootstrap's document draws (boot-K's draw depends on it and K alone).")] = 0,
    engine: Annotated[str, typer.Option("--engine", help="local (a process a model) or ray (a Ray cluster: RAY_ADDRESS, else a local one).")] = "local",
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Models trained at once, one core each (default: one per CPU).")] = None,
    document: Annotated[Optional[str], typer.Option("--document", help="What a document (the bootstrap's unit) is: file, record, or a JSONL/Parquet field (default as `import corpus`: a text file, a JSONL or Parquet record).")] = None,
    encoding: Annotated[str, typer.Option("--encoding", help="The text's encoding.")] = "utf-8",
    fmt: Annotated[Optional[str], format_option()] = None,
):
    """Train word embeddings on a corpus, again and again: a family of replicates, each an encoder.

    Examples:
      stimkit train speeches/ --name inaugural --seeds 10 --bootstrap 20
      stimkit train --corpus news --name news-ft --method fasttext --seeds 5
      stimkit test weat7 -e trained:inaugural/seed-0
    """
    from ..views.training import train_frame, train_line

    with open_store() as store:
        report = store.train(list(paths or []), name=name, corpus=corpus, method=method, seeds=seeds,
                             bootstrap=bootstrap, dim=dim, window=window, min_count=min_count, epochs=epochs,
                             resample_seed=resample_seed, engine=engine, workers=workers, document=document,
                             encoding=encoding, progress=_progress if err.is_terminal else None)
    err.print(train_line(report), highlight=False)
    emit(train_frame(report), fmt)


def _progress(done: int, total: int) -> None:
    """A line a replicate on a terminal (stderr): a family can take minutes."""
    err.print(f"trained {done} of {total} replicates", highlight=False)
