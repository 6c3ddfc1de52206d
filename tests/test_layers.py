"""Layer sweeps: `layer=all` stores every layer's vectors from one forward pass per batch,
each under the fingerprint of the single-layer spec."""

import numpy as np
import polars as pl
import pytest

from stimkit import StimkitError, store
from stimkit.encoders import embeddings, layers, resolve, token_variant

TEXTS = ["This is a caress.", "Here he is.", "The engineer is competent, and kind.", "Gladiolas are things.",
         "A much longer sentence, so that the others in its batch are padded."]


@pytest.fixture(scope="module")
def sweep():
    import torch
    torch.set_num_threads(1)
    return resolve("minilm,layer=all,pooling=mean")


def count_forwards(enc):
    model = enc._load()[1]
    calls = []
    handle = model.register_forward_hook(lambda *_: calls.append(1))
    return calls, handle


def test_layer_encoders_are_the_single_layer_specs(sweep):
    per_layer = layers(sweep)
    assert len(per_layer) == 7  # MiniLM-L6: the embeddings and six layers
    for i, enc in enumerate(per_layer):
        assert enc.fingerprint == resolve(f"minilm,layer={i}").fingerprint
        assert enc.spec == f"minilm,layer={i},pooling=mean" and enc.dim == 384
    assert per_layer[6].fingerprint == resolve("minilm").fingerprint == resolve("minilm,layer=-1").fingerprint
    plain = resolve("minilm")
    assert layers(plain) == [plain]
    named = resolve("MiniLM=minilm,layer=all")
    assert [e.display for e in layers(named)][:2] == ["MiniLM layer 0", "MiniLM layer 1"]


def test_sweep_equals_separate_encodes_with_one_forward_pass(sweep, tmp_path):
    con = store.connect(tmp_path / "s.duckdb")
    stimuli = pl.DataFrame({"stimulus": TEXTS})
    calls, handle = count_forwards(sweep)
    try:
        report = embeddings.encode_missing(con, sweep, stimuli)
    finally:
        handle.remove()
    assert len(calls) == 1  # every text in one batch: one forward pass for seven layers
    assert report["encoded"] == len(TEXTS) and len(report["fingerprints"]) == 7
    for i, enc in enumerate(layers(sweep)):
        single = resolve(f"minilm,layer={i}")
        calls, handle = count_forwards(single)
        try:
            expected = single.encode(TEXTS, [None] * len(TEXTS)).vectors
        finally:
            handle.remove()
        assert len(calls) == 1
        stored, _ = embeddings.load(con, enc, stimuli)
        assert np.allclose(stored, expected, atol=1e-5), i
        # the single-layer spec finds its vectors stored: nothing to encode
        assert embeddings.encode_missing(con, single, stimuli)["encoded"] == 0
    top = embeddings.load(con, resolve("minilm"), stimuli)[0]
    assert np.allclose(top, resolve("minilm").encode(TEXTS, [None] * len(TEXTS)).vectors, atol=1e-5)
    with pytest.raises(StimkitError, match="load each of"):
        embeddings.load(con, sweep, stimuli)


def test_sweep_fills_what_single_layers_left_and_keeps_what_they_stored(sweep, tmp_path):
    path = tmp_path / "r.duckdb"
    con = store.connect(path)
    embeddings.encode_missing(con, resolve("minilm,layer=3"), pl.DataFrame({"stimulus": TEXTS[:2]}))
    con.close()
    report = embeddings.encode_missing_released(path, sweep, pl.DataFrame({"stimulus": TEXTS}))
    assert report["encoded"] == len(TEXTS)  # every text lacks some layer
    con = store.connect(path)
    counts = dict(store.rows(con, "SELECT fingerprint, count(*) FROM embeddings_384 GROUP BY 1"))
    assert counts == {e.fingerprint: len(TEXTS) for e in layers(sweep)}
    again = embeddings.encode_missing(con, sweep, pl.DataFrame({"stimulus": TEXTS}))
    assert again["encoded"] == 0 and again["cached"] == len(TEXTS)


def test_sweep_refusals_are_one_line(sweep, empty_con):
    with pytest.raises(StimkitError, match="local engine"):
        embeddings.encode_missing(empty_con, sweep, pl.DataFrame({"stimulus": TEXTS}), engine="ray")
    with pytest.raises(StimkitError, match="c-word takes one layer"):
        token_variant(sweep)
