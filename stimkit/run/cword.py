"""c-word (Tan & Celis 2019): a sentence test's own stimuli, each represented by the vector of
the word its template inserted, through the encoder's token-pooling variant
(encoders.token_variant). Results say context = 'c-word' and name the encoder as given."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import polars as pl

from ..catalog.tests import CONTEXTS, TestDef
from ..encoders import Encoder, token_variant
from ..errors import InputError, UsageError


def in_context(test: TestDef, context: str | None) -> TestDef:
    """The test to run in `context` (None: its own). Only a sentence test can run as c-word."""
    if context is None or context == test.context:
        return test
    if context not in CONTEXTS:
        raise UsageError(f"unknown context {context!r} (known: {', '.join(CONTEXTS)})")
    if context != "c-word" or test.context != "sentence":
        hint = f" (try 'sent-{test.name}')" if test.context == "word" and context == "c-word" else ""
        raise UsageError(f"test {test.name!r} has context {test.context}: only a sentence test runs as c-word{hint}")
    return replace(test, context="c-word")


@lru_cache(maxsize=4)
def _tokenizer(model_id: str):
    """The model's tokenizer and its length limit (as the transformer encoder computes it)."""
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_id)
    positions = getattr(AutoConfig.from_pretrained(model_id), "max_position_embeddings", None)
    return tokenizer, min(positions or tokenizer.model_max_length, tokenizer.model_max_length)


def check_token_spans(enc: Encoder, frame: pl.DataFrame, test_name: str) -> None:
    """c-word: refuse, before encoding, a stimulus whose inserted word falls on no token of the
    model's tokenizer, naming its template and sentence (the encoder knows neither)."""
    texts = frame["stimulus"].to_list()
    tokenizer, limit = _tokenizer(enc.model_id)
    limit = int(enc.options.get("max_length", limit))  # truncate where the encoder does
    offsets = tokenizer(texts, return_offsets_mapping=True, truncation=True, max_length=limit)["offset_mapping"]
    for i, (offs, s, e) in enumerate(zip(offsets, frame["span_start"], frame["span_end"])):
        if s is None or e is None or not any(b > a and a < e and b > s for a, b in offs):
            template = frame["template_id"][i] if "template_id" in frame.columns else None
            raise InputError(f"test {test_name!r}: template {template}: no token of {enc.name!r} covers the inserted word "
                             f"(characters {s}-{e}) in {texts[i]!r}")


def variant(enc: Encoder, tests: list[tuple[TestDef, dict[str, pl.DataFrame]]]) -> Encoder:
    """The encoder's token variant for these c-word tests (with their selected sets), once
    every stimulus' word is known to fall on a token (checked once, here)."""
    token = token_variant(enc)
    for test, sets in tests:
        for frame in sets.values():
            check_token_spans(token, frame, test.name)
    return token
