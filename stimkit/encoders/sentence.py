"""sentence-transformers models as their authors configured them (`st:<model id or folder>`).

The model's own pipeline runs, through the sentence-transformers library: the modules listed
in its modules.json (Transformer, Pooling as 1_Pooling/config.json says, Dense, Normalize,
...), and its named prompts from config_sentence_transformers.json (`prompt=query`), or a
prompt given as text (`prompt_text="query: "`). With neither, the model's
default_prompt_name applies, as SentenceTransformer.encode does it. The prompt text used is
part of the fingerprint, with the content of every file of the model.

c-word (token pooling) is refused for an st: model: its pipeline pools sentences; the token
vectors of its transformer are `hf:<folder>,pooling=token`.

Nothing here imports torch until a text is encoded: the dimension is read from the modules'
config files.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np

from .. import StimkitError
from . import device as devices
from .base import Encoded, Encoder, Span, content_hash, positive_int

# Files of a model folder that never change its vectors (documentation, other runtimes' weights).
SKIP_FILES = {"README.md", ".gitattributes"}
SKIP_DIRS = {"onnx", "openvino", ".git", ".cache"}
POOLING_MODES = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                 "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


class SentenceTransformerEncoder(Encoder):
    def __init__(self, folder: Path, model: str, prompt: str | None = None, prompt_text: str | None = None,
                 batch_size: str | int = 32, device: str = "auto", dtype: str = "auto"):
        self.folder, self.model_id = folder, model
        self.name = f"st:{model}"
        where = self.name
        if prompt is not None and prompt_text is not None:
            raise StimkitError(f"encoder {where!r}: give prompt (a name) or prompt_text, not both")
        self.settings = self._json("config_sentence_transformers.json") or {}
        prompts = self.settings.get("prompts") or {}
        if prompt is not None and prompt not in prompts:
            known = ", ".join(sorted(prompts)) or "none"
            raise StimkitError(f"encoder {where!r}: the model has no prompt named {prompt!r} (its prompts: {known})")
        self.prompt_name, self.prompt_given = prompt, prompt_text
        if prompt_text is not None:
            self.prompt_text = prompt_text
        else:  # as SentenceTransformer.encode: the named prompt, else the model's default prompt
            name = prompt or self.settings.get("default_prompt_name")
            self.prompt_text = prompts.get(name, "") if name else ""
        self.batch_size = positive_int(batch_size, "batch_size", where)
        self.device = devices.resolve_device(devices.check_device(device, where))
        self.dtype = devices.resolve_dtype(devices.check_dtype(dtype, where), self.device)
        self.options = {}
        if prompt is not None:
            self.options["prompt"] = prompt
        if prompt_text is not None:
            self.options["prompt_text"] = prompt_text
        if self.dtype != "float32":
            self.options["dtype"] = self.dtype
        self.uses_span = False
        self._model = None
        self._dim = None

    def _json(self, relative: str) -> dict | list | None:
        path = self.folder / relative
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise StimkitError(f"encoder {self.name!r}: cannot read {path}: {e}") from None

    @property
    def dim(self) -> int:
        """The sentence embedding's size, followed through the modules' configs (a Dense changes
        it, a Pooling with several modes multiplies it); loads the model only if they do not say."""
        if self._dim is None:
            size = None
            for module in self._json("modules.json") or []:
                kind, cfg = module.get("type", ""), self._json(str(Path(module.get("path", "")) / "config.json")) or {}
                if kind.endswith("Transformer") or kind.endswith("models.Transformer"):
                    top = self._json(str(Path(module.get("path", "")) / "config.json")) if module.get("path") else None
                    top = top or self._json("config.json") or {}
                    size = top.get("hidden_size", top.get("n_embd", top.get("d_model")))
                elif kind.endswith("Pooling"):
                    mode = cfg.get("pooling_mode")  # sentence-transformers >= 6: a name or a list of names
                    modes = (1 if isinstance(mode, str) else len(mode)) if mode else sum(bool(cfg.get(m)) for m in POOLING_MODES)
                    width = cfg.get("embedding_dimension", cfg.get("word_embedding_dimension"))
                    if width and modes:
                        size = width * modes
                    else:
                        size = None
                        break
                elif kind.endswith("Dense"):
                    size = cfg.get("out_features")
                elif not kind.endswith(("Normalize", "Dropout")):
                    size = None  # a module whose output size the files do not say: ask the model
                    break
            self._dim = int(size) if size else int(self._load().get_sentence_embedding_dimension())
        return self._dim

    def identity(self) -> dict:
        return {"model": self.model_id, "prompt_text": self.prompt_text, **self._versions()}

    @staticmethod
    def _versions() -> dict:
        return {"sentence_transformers": version("sentence-transformers"), "transformers": version("transformers"),
                "torch": version("torch").split("+")[0]}

    def content(self) -> dict:
        """Every file of the model by content (modules, their configs and weights, tokenizer,
        prompts), the prompt text applied, the dtype; never the path or the spec's spelling."""
        files = {}
        for path in sorted(self.folder.rglob("*")):
            relative = path.relative_to(self.folder)
            if path.is_file() and path.name not in SKIP_FILES and not (set(relative.parts[:-1]) & SKIP_DIRS):
                files[relative.as_posix()] = content_hash(path)
        return {"kind": "sentence-transformers", "files": files, "prompt_text": self.prompt_text,
                "dtype": self.dtype, "dim": self.dim, **self._versions()}

    def _load(self):
        if self._model is None:
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            device = devices.torch_device(self.device)
            from .transformer import refusing_pickles

            try:
                with refusing_pickles(str(self.folder), self.name):
                    self._model = SentenceTransformer(str(self.folder), device=str(device), local_files_only=True,
                                                      model_kwargs={"dtype": getattr(torch, self.dtype)})
            except (OSError, ValueError) as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise StimkitError(f"encoder {self.name!r}: cannot load model {self.model_id!r}: {first}") from None
            self._model.eval()
        return self._model

    def subword_counts(self, words: list[str]) -> np.ndarray | None:
        """Pieces of each word under the pipeline's tokenizer (its folder's), or None if it has none."""
        if getattr(self, "_tokenizer", None) is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(str(self.folder))
            except (OSError, ValueError):
                return None
        ids = self._tokenizer(list(words), add_special_tokens=False)["input_ids"] if words else []
        return np.array([len(row) for row in ids], dtype=np.int64)

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        model = self._load()
        # the prompt as text, resolved above exactly as the library resolves a name (so that the
        # fingerprint holds what was applied)
        vectors = model.encode(list(texts), prompt=self.prompt_text or None, batch_size=self.batch_size,
                               convert_to_numpy=True, show_progress_bar=False)
        return Encoded(np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1))


def st(model: str, **options) -> SentenceTransformerEncoder:
    """A local folder with modules.json, or a hub id whose snapshot is in the local cache."""
    try:
        local = Path(model).expanduser()
        exists = local.is_dir()
    except (OSError, ValueError, RuntimeError):
        raise StimkitError(f"encoder 'st:{model}': not a model folder or hub id") from None
    if not exists:
        folder = None
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(model, "modules.json")
            folder = Path(cached).parent if isinstance(cached, str) else None
        except Exception:  # not a repo id
            folder = None
        if folder is None:
            raise StimkitError(f"encoder 'st:{model}': no such model folder, and not in the local Hugging Face cache "
                               "(download it first, e.g. `hf download ORG/NAME`)")
        local = folder
    elif not (local / "modules.json").is_file():
        raise StimkitError(f"encoder 'st:{model}': {local} has no modules.json: not a sentence-transformers model "
                           f"(use hf:{model})")
    return SentenceTransformerEncoder(local, str(local) if exists else model, **options)
