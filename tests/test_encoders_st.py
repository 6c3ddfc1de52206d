"""st: encoders run the model's own sentence-transformers pipeline; model identity is content."""

import json
import shutil
import warnings

import numpy as np
import polars as pl
import pytest

from stimkit import StimkitError, store
from stimkit.encoders import EncoderWarning, embeddings, resolve, split_display, token_variant
from stimkit.encoders.transformer import minilm_path

TEXTS = ["This is a caress.", "Here he is.", "The engineer is competent, and kind.", "Gladiolas are things."]


@pytest.fixture(scope="module")
def st_model(tmp_path_factory):
    """The embedded MiniLM rebuilt as another sentence-transformers model: CLS pooling, a Dense
    layer to 64 dimensions, Normalize, and two named prompts; saved as the library saves it."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules as models
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("st") / "model"
    torch.manual_seed(0)
    word = models.Transformer(minilm_path())
    modules = [word, models.Pooling(word.get_embedding_dimension(), pooling_mode="cls"),
               models.Dense(word.get_embedding_dimension(), 64, activation_function=torch.nn.Tanh()),
               models.Normalize()]
    SentenceTransformer(modules=modules, prompts={"query": "query: ", "passage": "passage: "},
                        device="cpu").save(str(folder))
    assert json.loads((folder / "1_Pooling" / "config.json").read_text())["pooling_mode"] == "cls"
    return folder


def test_st_vectors_are_the_libraries_own(st_model):
    from sentence_transformers import SentenceTransformer
    theirs = SentenceTransformer(str(st_model), device="cpu")
    for spec, kwargs in [(f"st:{st_model},prompt=query", {"prompt_name": "query"}),
                         (f"st:{st_model}", {}),
                         (f'st:{st_model},prompt_text="passage: "', {"prompt": "passage: "})]:
        enc = resolve(spec)
        ours = enc.encode(TEXTS, [None] * len(TEXTS)).vectors
        expected = theirs.encode(TEXTS, **kwargs)
        assert ours.shape == (4, 64) and enc.dim == 64  # the Dense's size, read from its config
        assert np.allclose(ours, expected, atol=1e-5), spec
        assert np.allclose(np.linalg.norm(ours, axis=1), 1, atol=1e-5)  # the Normalize module ran
    # the prompt changes the vectors, and the stimkit mean-pooled transformer is another encoder
    query = resolve(f"st:{st_model},prompt=query").encode(TEXTS[:1], [None]).vectors
    plain = resolve(f"st:{st_model}").encode(TEXTS[:1], [None]).vectors
    assert not np.allclose(query, plain, atol=1e-3)


def test_the_prompt_is_part_of_the_fingerprint(st_model):
    plain, query = resolve(f"st:{st_model}"), resolve(f"st:{st_model},prompt=query")
    passage = resolve(f"st:{st_model},prompt=passage")
    assert len({plain.fingerprint, query.fingerprint, passage.fingerprint}) == 3
    # the prompt applied, not how it was named: the same text given as text is the same encoder
    assert resolve(f'st:{st_model},prompt_text="query: "').fingerprint == query.fingerprint


def test_st_bad_prompt_and_folders_are_one_line(st_model, tmp_path):
    with pytest.raises(StimkitError, match="no prompt named 'doc'.*document, passage, query"):
        resolve(f"st:{st_model},prompt=doc")
    with pytest.raises(StimkitError, match="has no modules.json"):
        resolve(f"st:{tmp_path}")
    with pytest.raises(StimkitError, match="not in the local Hugging Face cache"):
        resolve("st:nobody/no-such-model")
    with pytest.raises(StimkitError, match="prompt .a name. or prompt_text, not both"):
        resolve(f'st:{st_model},prompt=query,prompt_text="q: "')


def test_hf_on_a_sentence_transformers_folder_names_the_st_spec(st_model):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resolve(f"hf:{st_model}")
    said = [str(w.message) for w in caught if issubclass(w.category, EncoderWarning)]
    assert len(said) == 1 and "\n" not in said[0] and f"st:{st_model}" in said[0]


def test_cword_is_refused_for_st_in_one_line(st_model):
    with pytest.raises(StimkitError, match=f"c-word is refused .* use hf:{st_model},pooling=token"):
        token_variant(f"st:{st_model}")


def test_minilm_and_its_folder_are_one_encoder(tmp_path):
    """The fingerprint is the model's content: `minilm`, `hf:<its folder>` and a copy of the
    folder elsewhere share vectors; a display name changes nothing; another pooling does."""
    copy = tmp_path / "copy"
    shutil.copytree(minilm_path(), copy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EncoderWarning)
        same = [resolve("minilm"), resolve(f"hf:{minilm_path()}"), resolve(f"hf:{copy}"),
                resolve("MiniLM=minilm"), resolve(f"hf:{minilm_path()},layer=-1,pooling=mean")]
        assert resolve(f"hf:{minilm_path()},layer=6").fingerprint == same[-1].fingerprint
        assert len({e.fingerprint for e in same[:4]}) == 1
        assert resolve("minilm,pooling=cls").fingerprint != same[0].fingerprint
        (copy / "config.json").write_text((copy / "config.json").read_text().replace("0.1", "0.2"))
        assert resolve(f"hf:{copy}").fingerprint != same[0].fingerprint  # other content, other model
    assert same[3].display == "MiniLM" and same[0].display == "minilm,pooling=mean"
    con = store.connect(tmp_path / "s.duckdb")
    stimuli = pl.DataFrame({"stimulus": TEXTS})
    first = embeddings.encode_missing(con, same[0], stimuli)
    second = embeddings.encode_missing(con, same[1], stimuli)
    assert first["encoded"] == 4 and second["encoded"] == 0 and second["cached"] == 4
    a, _ = embeddings.load(con, same[0], stimuli)
    b, _ = embeddings.load(con, same[2], stimuli)
    assert np.array_equal(a, b)


def test_display_names_parse():
    assert split_display("MiniLM=minilm") == ("MiniLM", "minilm")
    assert split_display("My model = hf:/a/b,pooling=cls") == ("My model", "hf:/a/b,pooling=cls")
    for spec in ("minilm,pooling=cls", "hf:/a=b/c", "vectors:x=y.txt", 'hf:x,template="a={text}"'):
        assert split_display(spec) == (None, spec)
    with pytest.raises(StimkitError, match="unknown encoder 'nope'"):
        resolve("Name=nope")
