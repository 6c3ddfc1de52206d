"""Encoding at speed: length-sorted batching gives the one-text-at-a-time vectors, the
fingerprint needs no torch, bad specs fail before anything is written, and an interrupted
encode keeps what it wrote."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stimkit import StimkitError, UsageError, store
from stimkit.encoders import embeddings
from stimkit.encoders import resolve
from stimkit.encoders.transformer import TransformerEncoder, length_batches, minilm_path, span_tokens

from conftest import snapshot

REPO = Path(__file__).resolve().parent.parent
# very different lengths in one sorted window: 3 tokens to ~120
TEXTS = ["Joy.", "This is a gladiola.", "Here he is, and she is there too.",
         " ".join(["The engineer is competent and the nurse is kind"] * 12) + ".",
         "A much longer sentence so that the first one is padded, with a gladiola in it.",
         "Gladiolas are things.", "That is an insect on a rose in a garden at dusk."]


def word_span(text, word="gladiola"):
    lower = text.lower()
    at = lower.find(word) if word in lower else 0
    return (at, at + (len(word) if word in lower else 3))


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch
    torch.set_num_threads(1)


@pytest.mark.parametrize("spec", ["minilm,pooling=cls", "minilm,pooling=mean", "minilm,pooling=token",
                                  "minilm,pooling=token,subtoken=mean", "minilm,pooling=last,layer=sum"])
def test_sorted_token_budget_batches_equal_one_text_at_a_time(spec):
    spans = [word_span(t) for t in TEXTS]
    # a budget of 64 padded tokens: the long text alone, the short ones packed several to a batch
    batched = resolve(spec + ",batch_tokens=64")
    by_budget = batched.encode(TEXTS, spans).vectors
    alone = np.stack([resolve(spec).encode([t], [s]).vectors[0] for t, s in zip(TEXTS, spans)])
    assert np.isfinite(by_budget).all()
    assert np.allclose(by_budget, alone, atol=1e-5), np.abs(by_budget - alone).max()
    by_count = resolve(spec + ",batch_size=3").encode(TEXTS, spans).vectors
    assert np.allclose(by_count, alone, atol=1e-5)


def test_length_batches_by_hand():
    lengths = [3, 10, 5, 10, 1]
    # longest first; a batch holds texts while texts x longest <= 20
    assert length_batches(lengths, 20) == [[1, 3], [2, 0, 4]]
    assert length_batches(lengths, 20, batch_size=2) == [[1, 3], [2, 0], [4]]
    assert length_batches([50, 2], 20) == [[0], [1]]  # a text over the budget still gets its own batch
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 200, 500).tolist()
    cut = length_batches(lengths, 512)
    assert sorted(i for b in cut for i in b) == list(range(500))
    assert all(len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 512 for b in cut)


def test_bfloat16_on_cpu_is_close_and_has_its_own_fingerprint():
    fp32 = resolve("minilm,device=cpu,dtype=float32")
    bf16 = resolve("minilm,device=cpu,dtype=bfloat16")
    assert fp32.fingerprint == resolve("minilm").fingerprint  # auto on a CPU is fp32: the same vectors
    assert bf16.fingerprint != fp32.fingerprint and bf16.options["dtype"] == "bfloat16"
    a = fp32.encode(TEXTS, [None] * len(TEXTS)).vectors
    b = bf16.encode(TEXTS, [None] * len(TEXTS)).vectors
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert b.dtype == np.float32 and cos.min() > 0.99 and not np.allclose(a, b, atol=1e-4)


def test_fingerprint_and_dim_without_torch_and_stable_across_processes():
    specs = ["glove-6b-50d", "minilm", "minilm,pooling=token", "use-m3"]
    code = ("import json, sys; from stimkit.encoders import resolve; "
            f"encs = [resolve(s) for s in {specs!r}]; "
            "print(json.dumps([[e.fingerprint, e.dim] for e in encs] + "
            "[sorted(m for m in ('torch', 'transformers', 'tensorflow') if m in sys.modules)]))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                      check=True).stdout) for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0][-1] == []  # no deep-learning import to compute a fingerprint
    assert runs[0][:-1] == [[resolve(s).fingerprint, resolve(s).dim] for s in specs]
    assert [d for _, d in runs[0][:-1]] == [50, 384, 384, 512]


def test_fingerprint_follows_the_model_files(tmp_path):
    source = Path(minilm_path())
    for f in source.iterdir():  # a copy of MiniLM: small files copied, the weights linked
        if f.is_file():
            (tmp_path / f.name).symlink_to(f) if f.stat().st_size > 2**20 else (tmp_path / f.name).write_bytes(f.read_bytes())
    before = resolve(f"hf:{tmp_path}").fingerprint
    assert resolve(f"hf:{tmp_path}").fingerprint == before
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(vocab.read_text() + "stimkit\n")  # another tokenizer: other vectors
    assert resolve(f"hf:{tmp_path}").fingerprint != before


def test_warm_encode_loads_no_model(tmp_path, monkeypatch):
    con = store.connect(tmp_path / "s.duckdb")
    frame = pl.DataFrame({"stimulus": TEXTS[:3], "span_start": [0] * 3, "span_end": [3] * 3})
    assert embeddings.encode_missing(con, resolve("minilm"), frame)["encoded"] == 3

    def no_load(self):
        raise AssertionError("the model was loaded for a no-op")

    monkeypatch.setattr(TransformerEncoder, "_load", no_load)
    report = embeddings.encode_missing(con, resolve("minilm"), frame)
    assert report["cached"] == 3 and report["encoded"] == 0


def test_bad_layer_fails_before_anything_is_written(catalog_con, tmp_path):
    from typer.testing import CliRunner
    from stimkit.cli import app
    db = str(tmp_path / "catalog-copy.duckdb")  # the catalog_con fixture's copy
    before = snapshot(catalog_con)
    catalog_con.close()
    result = CliRunner().invoke(app, ["--db", db, "encode", "-e", "minilm,layer=99", "--set", "flowers@caliskan2017"])
    assert result.exit_code == 1 and "layer 99 does not exist" in result.output
    con = store.connect(db)
    assert snapshot(con) == before  # no encoder row, no empty vector table
    con.close()


def test_unknown_engine_is_refused_before_anything_is_written(empty_con):
    before = snapshot(empty_con)
    with pytest.raises(UsageError, match=r"^unknown engine 'spark' \(known: local, ray\)$"):
        embeddings.encode_missing(empty_con, resolve("glove-6b-50d"), pl.DataFrame({"stimulus": ["rose"]}), engine="spark")
    assert snapshot(empty_con) == before


def test_encode_inside_a_callers_transaction_is_all_or_nothing(tmp_path):
    con = store.connect(tmp_path / "s.duckdb")
    enc = resolve("glove-6b-50d")
    frame = pl.DataFrame({"stimulus": ["This is a rose.", "That is a gun."]})
    with pytest.raises(RuntimeError):
        with store.transaction(con):
            assert embeddings.encode_missing(con, enc, frame, batch_size=1)["encoded"] == 2
            assert store.one(con, "SELECT count(*) FROM embeddings_50")[0] == 2  # seen inside
            raise RuntimeError("the caller fails later")
    assert not store.one(con, "SELECT 1 FROM information_schema.tables WHERE table_name = 'embeddings_50'")
    with store.transaction(con):
        embeddings.encode_missing(con, enc, frame)
    assert store.one(con, "SELECT count(*) FROM embeddings_50")[0] == 2


def test_span_no_token_covers_names_the_sentence():
    offsets = [(0, 0), (0, 4), (5, 7), (8, 9), (9, 10), (0, 0)]
    assert span_tokens(offsets, (5, 7), "This is a.", "minilm") == [2]
    with pytest.raises(StimkitError) as e:
        span_tokens(offsets, (20, 25), "This is a.", "minilm")
    assert "characters 20-25 of sentence 'This is a.'" in str(e.value)


KEYS = ["pooling", "layer", "subtoken", "batch_size", "batch_tokens", "max_length", "device", "dtype",
        "threads", "binary", "dim", "name", "self", "model"]
VALUES = ["cls", "mean", "token", "last", "max", "top", "sum", "first", "99", "-1", "-7", "0", "2", "abc", "cpu",
          "cuda", "cuda:1", "cuda:x", "mps", "auto", "bfloat16", "float16", "float32", "1", "", "cbow", "true"]


@st.composite
def encoder_specs(draw):
    head = draw(st.sampled_from(["minilm", "glove-6b-50d", "use-m3", f"hf:{minilm_path()}", "hf:", "vectors:",
                                 "import:", "hf:~nosuchuser/x", "vectors:/no/such", ""]) | st.text(max_size=12))
    if draw(st.booleans()):
        head += draw(st.text(max_size=6))
    options = draw(st.lists(st.tuples(st.sampled_from(KEYS) | st.text(max_size=6),
                                      st.sampled_from(["=", "", "==", " = "]),
                                      st.sampled_from(VALUES) | st.text(max_size=6)), max_size=4))
    return head + "".join(f",{k}{sep}{v}" for k, sep, v in options)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(encoder_specs())
def test_any_spec_string_is_an_encoder_or_one_stimkit_error(spec):
    try:
        enc = resolve(spec)
    except StimkitError as e:
        assert "\n" not in str(e)
        return
    if isinstance(enc, TransformerEncoder) and not Path(enc.model_id).is_dir():
        return  # a hub id: its config would be fetched, which the fuzz does not do
    assert len(enc.fingerprint) == 16 and enc.dim > 0 and enc.spec.startswith(enc.name)


INTERRUPTED = """
import sys
import polars as pl
from stimkit import store
from stimkit.encoders import embeddings
from stimkit.encoders import resolve
con = store.connect(sys.argv[1])
texts = [f"Sentence number {i} says {'more ' * (i % 7)}things." for i in range(600)]
frame = pl.DataFrame({"stimulus": texts, "span_start": [0] * 600, "span_end": [8] * 600})
embeddings.encode_missing(con, resolve("minilm,batch_size=8"), frame, batch_size=64,
                          progress=lambda done, total: print(done, flush=True))
"""


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_encode_keeps_what_it_wrote_and_resumes(tmp_path, how):
    db = tmp_path / "s.duckdb"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED, str(db)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    committed = 0
    for line in proc.stdout:  # the writer reports only what it has committed
        committed = int(line)
        if committed >= 40:
            break
    proc.send_signal(how)
    proc.communicate(timeout=60)
    assert 40 <= committed < 600
    con = store.connect(db)
    kept = store.one(con, "SELECT count(*) FROM embeddings_384")[0]
    assert committed <= kept < 600, (committed, kept)
    texts = [f"Sentence number {i} says {'more ' * (i % 7)}things." for i in range(600)]
    frame = pl.DataFrame({"stimulus": texts, "span_start": [0] * 600, "span_end": [8] * 600})
    enc = resolve("minilm")
    report = embeddings.encode_missing(con, enc, frame)
    assert report["cached"] == kept and report["encoded"] == 600 - kept
    matrix, _ = embeddings.load(con, enc, frame)
    sample = np.arange(0, 600, 37)
    alone = enc.encode([texts[i] for i in sample], [None] * len(sample)).vectors
    assert np.allclose(matrix[sample], alone, atol=1e-5)
    con.close()


@pytest.mark.parametrize("threaded", [False, True])  # in line (a model on the CPU), or a thread (a GPU's)
def test_a_released_encode_appends_seldom_and_keeps_everything(tmp_path, monkeypatch, threaded):
    """With the store closed between appends, each append opens it (a checkpoint on close): the
    writer appends at most every few seconds, not once a batch, and loses nothing."""
    db = tmp_path / "s.duckdb"
    store.connect(db).close()
    opened = []
    connect = store.connect
    monkeypatch.setattr(embeddings.store, "connect", lambda *a, **k: opened.append(1) or connect(*a, **k))
    made = embeddings.Writer.__init__
    monkeypatch.setattr(embeddings.Writer, "__init__", lambda self, *a, **k: made(self, *a, **k, threaded=threaded))
    texts = [f"rose number {i}" for i in range(60)]
    seen = []
    report = embeddings.encode_missing_released(db, resolve("glove-6b-50d"), pl.DataFrame({"stimulus": texts}),
                                                batch_size=2, progress=lambda done, total: seen.append(done))
    assert report["encoded"] == 60 and seen[-1] == 60
    assert seen[0] == 0 and 0 < seen[1] < 60  # the first batch lands at once, the rest later
    assert len(opened) <= 3      # one to find what is missing, then two or three appends for 30 batches
    con = store.connect(db)
    assert store.one(con, "SELECT count(*) FROM embeddings_50")[0] == 60
    con.close()
