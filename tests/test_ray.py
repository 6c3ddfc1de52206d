"""`encode --engine ray` on a local two-worker CPU cluster stores the default engine's vectors."""

import numpy as np
import polars as pl
import pytest

from stimkit.encoders import embeddings
from stimkit import store
from stimkit.encoders import ray_engine, resolve

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'stimkit[ray]' to run the Ray engine tests")

TEXTS = [f"Sentence {i}: the {'very ' * (i % 9)}competent engineer met a gladiola." for i in range(48)]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def frame():
    starts = [t.index("gladiola") for t in TEXTS]
    return pl.DataFrame({"stimulus": TEXTS, "span_start": starts, "span_end": [s + 8 for s in starts]})


def test_ray_engine_stores_the_local_engines_vectors(cluster, tmp_path):
    enc = resolve("minilm,pooling=token")  # spans travel through Ray too (mean pooling: the test below)
    local, remote = store.connect(tmp_path / "local.duckdb"), store.connect(tmp_path / "ray.duckdb")
    embeddings.encode_missing(local, enc, frame())
    report = embeddings.encode_missing(remote, enc, frame(), batch_size=8, engine="ray", workers=2)
    assert report["encoded"] == len(TEXTS)
    ours, _ = embeddings.load(local, enc, frame())
    theirs, _ = embeddings.load(remote, enc, frame())
    assert np.isfinite(theirs).all() and np.allclose(ours, theirs, atol=1e-5)
    assert embeddings.encode_missing(remote, enc, frame(), engine="ray")["encoded"] == 0  # a no-op starts nothing


def test_interrupted_ray_encode_keeps_what_arrived_and_resumes(cluster, tmp_path, monkeypatch):
    enc = resolve("minilm")
    con = store.connect(tmp_path / "ray.duckdb")
    real = ray_engine.batches
    arrived = []

    def interrupted(*args, **kwargs):  # Ctrl-C in the driver after two batches came back
        for n, (keys, encoded) in enumerate(real(*args, **kwargs)):
            if n == 2:
                raise KeyboardInterrupt
            arrived.append(keys.height)
            yield keys, encoded

    monkeypatch.setattr(ray_engine, "batches", interrupted)
    with pytest.raises(KeyboardInterrupt):
        embeddings.encode_missing(con, enc, frame(), batch_size=8, engine="ray", workers=2)
    kept = sum(arrived)
    assert 0 < kept < len(TEXTS) and store.one(con, "SELECT count(*) FROM embeddings_384")[0] == kept
    monkeypatch.setattr(ray_engine, "batches", real)
    report = embeddings.encode_missing(con, enc, frame(), batch_size=8, engine="ray", workers=2)
    assert report["cached"] == kept and report["encoded"] == len(TEXTS) - kept
    matrix, _ = embeddings.load(con, enc, frame())
    assert np.allclose(matrix, enc.encode(TEXTS, [None] * len(TEXTS)).vectors, atol=1e-5)


def test_worker_spec_pins_the_drivers_dtype():
    assert ray_engine.worker_spec(resolve("minilm,device=cpu,pooling=cls")) == "minilm,pooling=cls,dtype=float32"
    assert ray_engine.worker_spec(resolve("glove-6b-50d,pooling=token")) == "glove-6b-50d,pooling=token"
