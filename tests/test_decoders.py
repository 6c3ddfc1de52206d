"""Decoder-only embedders on tiny randomly initialised GPT-2, Llama and Qwen2 models built here
from a config and a locally trained tokenizer (no download), loaded through the real hf: code."""

import numpy as np
import pytest

from stimkit import StimkitError
from stimkit.encoders import resolve

SENTENCES = ["the nurse is kind", "the engineer is competent and very careful today", "a tulip",
             "query: what is a flower", "instruct: find the word", "he is here", "she is there now"]
TEXTS = ["the nurse is kind", "a tulip", "the engineer is competent and very careful today", "he is here"]


def tokenizer_for(folder):
    """A byte-level BPE (as GPT-2's and Qwen's) trained on a few sentences, saved, and read back
    as transformers reads it for this model type."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(SENTENCES * 3, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>", "<unk>", "<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>", pad_token="<pad>").save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module", params=["gpt2", "llama", "qwen2"])
def decoder(request, tmp_path_factory):
    import torch
    from transformers import AutoModel, GPT2Config, LlamaConfig, Qwen2Config
    torch.set_num_threads(1)
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp(request.param)
    probe = tokenizer_for(folder)
    size = dict(vocab_size=len(probe), bos_token_id=None, eos_token_id=probe.eos_token_id, pad_token_id=probe.pad_token_id)
    config = {"gpt2": lambda: GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=64, **size),
              "llama": lambda: LlamaConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                           num_key_value_heads=1, max_position_embeddings=64, **size),
              "qwen2": lambda: Qwen2Config(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                           num_key_value_heads=1, max_position_embeddings=64, **size)}[request.param]()
    model = AutoModel.from_config(config)
    model.save_pretrained(folder)
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)  # as the model type reads it (Qwen2 has its own class)
    assert tok("the nurse is kind")["input_ids"] and tok.eos_token_id is not None
    return folder, model.eval(), tok


def by_hand(model, tok, text, layer=-1, append_eos=False):
    """Every token's hidden state of one text alone (no padding at all)."""
    import torch
    ids = tok(text)["input_ids"] + ([tok.eos_token_id] if append_eos else [])
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    return out.hidden_states[layer][0].numpy(), ids


@pytest.mark.parametrize("padding", ["left", "right"])
def test_last_token_is_the_hidden_state_at_the_last_real_token(decoder, padding):
    folder, model, tok = decoder
    enc = resolve(f"hf:{folder},pooling=last,padding={padding},batch_size=4")
    got = enc.encode(TEXTS, [None] * len(TEXTS)).vectors  # one batch of mixed lengths
    for text, row in zip(TEXTS, got):
        hidden, _ = by_hand(model, tok, text)
        assert np.allclose(row, hidden[-1], atol=1e-5), (padding, text)
    alone = np.vstack([enc.encode([t], [None]).vectors for t in TEXTS])
    assert np.allclose(got, alone, atol=1e-5)


@pytest.mark.parametrize("padding", ["left", "right"])
def test_eos_pooling_appends_eos_and_takes_its_state(decoder, padding):
    folder, model, tok = decoder
    got = resolve(f"hf:{folder},pooling=eos,padding={padding},batch_size=4").encode(TEXTS, [None] * 4).vectors
    for text, row in zip(TEXTS, got):
        hidden, ids = by_hand(model, tok, text, append_eos=True)
        assert ids[-1] == tok.eos_token_id and np.allclose(row, hidden[-1], atol=1e-5)
    assert not np.allclose(got, resolve(f"hf:{folder},pooling=last").encode(TEXTS, [None] * 4).vectors, atol=1e-4)


@pytest.mark.parametrize("padding", ["left", "right"])
def test_mean_pooling_with_an_instruction_template(decoder, padding):
    folder, model, tok = decoder
    spec = f'hf:{folder},pooling=mean,padding={padding},batch_size=4,template="instruct: find the word {{text}}"'
    with_prompt = resolve(spec).encode(TEXTS, [None] * 4).vectors
    without = resolve(spec + ",include_prompt=false").encode(TEXTS, [None] * 4).vectors
    prefix = "instruct: find the word "
    for text, a, b in zip(TEXTS, with_prompt, without):
        hidden, ids = by_hand(model, tok, prefix + text)
        assert np.allclose(a, hidden.mean(0), atol=1e-5)  # every token of the wrapped text
        # the stimulus's tokens only: those holding one of its characters (a lone space token
        # between template and text is the template's)
        offsets = tok(prefix + text, return_offsets_mapping=True)["offset_mapping"]
        mine = [i for i, (s, e) in enumerate(offsets) if e > len(prefix)]
        assert 0 < len(mine) < len(ids) and np.allclose(b, hidden[mine].mean(0), atol=1e-5)
    assert resolve(spec).fingerprint != resolve(spec + ",include_prompt=false").fingerprint
    assert resolve(spec).fingerprint != resolve(f"hf:{folder},pooling=mean").fingerprint


def test_layer_option_on_a_decoder_and_padding_not_in_the_fingerprint(decoder):
    folder, model, tok = decoder
    got = resolve(f"hf:{folder},pooling=last,layer=1,padding=left").encode(TEXTS, [None] * 4).vectors
    for text, row in zip(TEXTS, got):
        assert np.allclose(row, by_hand(model, tok, text, layer=1)[0][-1], atol=1e-5)
    left, right = resolve(f"hf:{folder},pooling=last,padding=left"), resolve(f"hf:{folder},pooling=last,padding=right")
    assert left.fingerprint == right.fingerprint  # the same vectors (to float rounding)


def test_decoder_options_fail_in_one_line(decoder):
    folder, _, _ = decoder
    for spec, message in [(f"hf:{folder},padding=middle", "padding must be auto, left or right"),
                          (f"hf:{folder},template=no-slot", "template must hold {text} once"),
                          (f"hf:{folder},include_prompt=false", "include_prompt=false needs a template"),
                          (f'hf:{folder},pooling=last,prompt_text="q: ",include_prompt=false', "applies to mean or max"),
                          (f'hf:{folder},template="a {{text}}",prompt_text="q"', "template or prompt_text, not both"),
                          (f'hf:{folder},template="open', "double quote is not closed")]:
        with pytest.raises(StimkitError, match=message):
            resolve(spec)


def test_device_map_without_accelerate_is_one_line(decoder):
    import importlib.util
    folder, _, _ = decoder
    enc = resolve(f"hf:{folder},pooling=last,device_map=auto")
    if importlib.util.find_spec("accelerate") is None:
        with pytest.raises(StimkitError, match="device_map=auto needs the package accelerate"):
            enc.encode(["a tulip"], [None])
    else:  # on a CPU-only machine accelerate places every layer on the CPU: the same vectors
        got = enc.encode(TEXTS, [None] * 4).vectors
        assert np.allclose(got, resolve(f"hf:{folder},pooling=last").encode(TEXTS, [None] * 4).vectors, atol=1e-5)


def test_token_pooling_finds_the_word_on_either_padding_side(decoder):
    folder, model, tok = decoder
    texts = ["the nurse is kind", "a tulip", "the engineer is competent and very careful today"]
    spans = [(4, 9), (2, 7), (4, 12)]  # nurse, tulip, engineer
    got = {side: resolve(f'hf:{folder},pooling=token,subtoken=mean,padding={side},template="query: {{text}}"')
           .encode(texts, spans).vectors for side in ("left", "right")}
    assert np.allclose(got["left"], got["right"], atol=1e-5)
    for text, (s, e), row in zip(texts, spans, got["left"]):
        hidden, _ = by_hand(model, tok, "query: " + text)
        offsets = tok("query: " + text, return_offsets_mapping=True)["offset_mapping"]
        word = [i for i, (a, b) in enumerate(offsets) if b > a and a < e + 7 and b > s + 7]
        assert word and np.allclose(row, hidden[word].mean(0), atol=1e-5)
