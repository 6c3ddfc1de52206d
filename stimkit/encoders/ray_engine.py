"""Encoding on a Ray cluster (`stimkit encode --engine ray`, extra `stimkit[ray]`).

Ray Data runs `map_batches` over an actor pool: each actor holds one model replica (one
GPU each, or `CPUS_PER_REPLICA` CPUs each where there is no GPU) and encodes the batches it
is handed. The vectors stream back to this process (the driver), which alone writes them to
the store, through the same writer as the local engine, so a Ray encode is resumable the
same way. The driver connects to the cluster named by RAY_ADDRESS, or starts a local one.

Every replica rebuilds the encoder from the spec as the user wrote it, with the dtype the
driver chose (so that `auto` cannot differ between a CPU head and GPU workers), and checks
that its fingerprint is the driver's before it encodes anything.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import polars as pl
import pyarrow as pa

from .. import StimkitError
from .base import Encoded, Encoder

CPUS_PER_REPLICA = 1
KEYS = ("text", "span_start", "span_end")


def worker_spec(enc: Encoder) -> str:
    """The spec a replica builds: the user's, with the driver's resolved dtype for transformers."""
    from . import parse

    requested = getattr(enc, "requested", enc.spec)
    head, options = parse(requested)
    if hasattr(enc, "dtype") and hasattr(enc, "device"):  # a transformer: replicas pick their own device
        options.pop("device", None)
        options["dtype"] = enc.dtype
    return head + "".join(f",{k}={v}" for k, v in options.items())


class Replica:
    """One model replica in a Ray actor: Arrow batch of keys in, the same keys with vectors out."""

    def __init__(self, spec: str, fingerprint: str):
        from . import resolve

        self.enc = resolve(spec)
        if self.enc.fingerprint != fingerprint:
            raise StimkitError(f"encoder {spec!r}: a Ray worker sees another model (fingerprint "
                               f"{self.enc.fingerprint}, driver {fingerprint}): install the same model files there")

    def __call__(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        if self.enc.uses_span:
            spans = list(zip(batch.column("span_start").to_pylist(), batch.column("span_end").to_pylist()))
        else:
            spans = [None] * len(texts)
        got = self.enc.encode(texts, spans)
        vectors = np.ascontiguousarray(got.vectors, dtype=np.float32)
        return batch.select(list(KEYS)).append_column(
            "vector", pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1])
        ).append_column("oov", pa.array(got.oov, pa.list_(pa.string()))).append_column("note", pa.array(got.notes, pa.string()))


def connect():
    try:
        import ray
    except ImportError:
        raise StimkitError("--engine ray needs Ray: pip install 'stimkit[ray]'") from None
    if not ray.is_initialized():
        # address=None: RAY_ADDRESS if set, else a new local cluster on this machine
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, log_to_driver=False,
                 include_dashboard=False, configure_logging=False)
    # stderr is for stimkit's own progress bar: Ray Data's progress log would interleave with it
    ray.data.DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return ray


def batches(enc: Encoder, todo: pl.DataFrame, batch_size: int, workers: int | None = None):
    """(keys, Encoded) pairs as the replicas finish them, in no particular order."""
    ray = connect()
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    if workers is None:
        workers = gpus or max(1, int(resources.get("CPU", 1)) // CPUS_PER_REPLICA)
    # one block per batch_size rows, so that every replica gets work (cut here: a repartition
    # would need CPUs that the replicas hold)
    keys = todo.select(KEYS).to_arrow()
    data = ray.data.from_arrow([keys.slice(s, batch_size) for s in range(0, keys.num_rows, batch_size)])
    encoded = data.map_batches(
        Replica, fn_constructor_kwargs={"spec": worker_spec(enc), "fingerprint": enc.fingerprint},
        batch_size=batch_size, batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=workers),
        num_gpus=1 if gpus else 0, num_cpus=0 if gpus else CPUS_PER_REPLICA)
    for out in encoded.iter_batches(batch_format="pyarrow", batch_size=None):
        column = out.column("vector").combine_chunks()
        vectors = column.values.to_numpy(zero_copy_only=False).reshape(len(column), enc.dim)
        keys = pl.from_arrow(out.select(list(KEYS)))
        yield keys, Encoded(vectors.astype(np.float32), out.column("oov").to_pylist(), out.column("note").to_pylist())
