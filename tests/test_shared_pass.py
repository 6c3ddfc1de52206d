"""Poolings of one model share its forward pass: `minilm` and `minilm,pooling=cls` in one run
tokenise and run each batch once, and store the vectors each gives alone, bit for bit."""

import numpy as np
import polars as pl
import pytest

from stimkit import StimkitError, store
from stimkit.encoders import embeddings, resolve
from stimkit.encoders.transformer import SharedPass

TEXTS = ["This is a caress.", "Here he is.", "The engineer is competent, and kind.", "Gladiolas are things.",
         "A much longer sentence, so that the others in its batch are padded."]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch
    torch.set_num_threads(1)


def forwards(enc):
    model = enc._load()[1]
    calls = []
    return calls, model.register_forward_hook(lambda *_: calls.append(1))


def test_shared_pass_stores_each_poolings_own_vectors_from_one_forward_pass(tmp_path):
    specs = ["minilm", "minilm,pooling=cls", "minilm,pooling=max", "minilm,pooling=last"]
    encs = [resolve(s) for s in specs]
    stimuli = pl.DataFrame({"stimulus": TEXTS})
    [(joined, frame)] = embeddings.shared([(e, stimuli) for e in encs])
    assert isinstance(joined, SharedPass) and joined.members == encs and frame.height == len(TEXTS)
    con = store.connect(tmp_path / "s.duckdb")
    calls, handle = forwards(encs[0])
    try:
        report = embeddings.encode_missing(con, joined, stimuli)
    finally:
        handle.remove()
    assert len(calls) == 1 and report["encoded"] == len(TEXTS)  # one batch, one pass for four poolings
    assert report["fingerprints"] == [e.fingerprint for e in encs]
    for spec, enc in zip(specs, encs):
        alone = resolve(spec).encode(TEXTS, [None] * len(TEXTS)).vectors
        stored, _ = embeddings.load(con, enc, stimuli)
        assert np.array_equal(stored, alone), spec  # bit for bit: the same batches, the same pass
    assert embeddings.missing(con, joined, embeddings.items_for(joined, stimuli)).height == 0


def test_only_encoders_of_one_pass_are_joined():
    stimuli = pl.DataFrame({"stimulus": TEXTS})
    needs = [(resolve(s), stimuli) for s in ("minilm", "glove-6b-50d", "minilm,pooling=token",
                                             "minilm,layer=3", "minilm,pooling=cls", "minilm,layer=3,pooling=cls")]
    out = embeddings.shared(needs)
    # token pooling reads spans, another layer is another pass: each stays alone, in order
    assert [type(e).__name__ for e, _ in out] == ["SharedPass", "GloveEncoder" if type(needs[1][0]).__name__ ==
                                                  "GloveEncoder" else type(needs[1][0]).__name__,
                                                  "TransformerEncoder", "SharedPass"]
    assert [m.spec for m in out[0][0].members] == ["minilm,pooling=mean", "minilm,pooling=cls"]
    assert [m.spec for m in out[3][0].members] == ["minilm,layer=3,pooling=mean", "minilm,layer=3,pooling=cls"]
    assert embeddings.shared(needs[:2]) == needs[:2]  # one transformer: nothing to share
    with pytest.raises(StimkitError):
        SharedPass([resolve("minilm"), resolve("minilm,layer=3")])


def test_a_run_with_two_poolings_gives_the_numbers_of_separate_encodes(catalog_db, tmp_path):
    import shutil

    import stimkit

    def run(path, together):
        shutil.copy(catalog_db, path)
        with stimkit.open(path) as s:
            if not together:  # each encoder alone first: the run then finds every vector stored
                for spec in ("minilm", "minilm,pooling=cls"):
                    s.encode([spec], tests=["sent-weat1"])
            rep = s.test(["sent-weat1"], encoders=["minilm", "minilm,pooling=cls"], budget=2000, seed=1)
            return sorted((r.encoder, r.effect_size, r.p_value) for r in rep.results)

    together, apart = run(tmp_path / "a.duckdb", True), run(tmp_path / "b.duckdb", False)
    assert len(together) == 2 and together == apart


def test_what_is_missing_comes_in_the_items_order(tmp_path):
    """The texts to encode keep the order they were asked in, whatever order DuckDB's join
    gives: a transformer's batches (and so the last bits of its vectors) follow that order,
    so a shared pass and separate encodes store the same vectors."""
    con = store.connect(tmp_path / "s.duckdb")
    glove = resolve("glove-6b-50d")
    words = [f"w{i}" for i in range(5000)][::-1]  # more than one DuckDB vector (2048 rows), not sorted
    stored = pl.DataFrame({"stimulus": words[::7]})
    embeddings.encode_missing(con, glove, stored)
    items = embeddings.items_for(glove, pl.DataFrame({"stimulus": words}))
    todo = embeddings.missing(con, glove, items)
    keep = set(words[::7])
    assert todo["text"].to_list() == [w for w in words if w not in keep]
    joined = SharedPass([resolve("minilm"), resolve("minilm,pooling=cls")])
    embeddings.register(con, joined)
    assert embeddings.missing(con, joined, items)["text"].to_list() == words
