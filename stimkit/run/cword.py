"""c-word (Tan & Celis 2019): a sentence test's own stimuli, each represented by the vector of
the word its template inserted, through the encoder's token-pooling variant
(encoders.token_variant). Results say context = 'c-word' and name the encoder as given."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import polars as pl

from ..catalog.definitions import CONTEXTS, TestDef
from ..encoders import Encoder, token_variant
from ..errors import InputError, UsageError


def in_context(test: TestDef, context: str | None) -> TestDef:
    """The test to run in `context` (None: its own). Only a sentence test can run as c-word;
    `c-word:<slot>` takes the word of that slot of a multi-slot set (stimuli.slots). A test
    that is c-word by default (its sets from a corpus: catalog.definitions.infer_context) is a
    sentence test too: `sentence` runs it on the pooled sentence."""
    if context is None or context == test.context:
        return test
    context, colon, slot = context.partition(":")
    if context not in CONTEXTS or (colon and (context != "c-word" or not slot)):
        raise UsageError(f"unknown context {context + colon + slot!r} (known: {', '.join(CONTEXTS)}, c-word:<slot>)")
    if test.context == "c-word":   # a sentence test that runs as c-word by default
        test = replace(test, context="sentence", cword_slot=None)
        if context == "sentence":
            return test
    if context != "c-word" or test.context != "sentence":
        hint = f" (try 'sent-{test.name}')" if test.context == "word" and context == "c-word" else ""
        raise UsageError(f"test {test.name!r} has context {test.context}: only a sentence test runs as c-word{hint}")
    return replace(test, context="c-word", cword_slot=slot or None)


def label(test: TestDef) -> str:
    """The context a result records: c-word, or c-word:<slot> (another hypothesis)."""
    return f"c-word:{test.cword_slot}" if test.context == "c-word" and test.cword_slot else test.context


def slot_sets(con, test: TestDef, sets: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """c-word on a named slot: each stimulus' span moved to that slot's word (a stimulus of a
    multi-slot set without it is left out; a one-slot set, such as the attribute sentences,
    keeps its word). Refused when neither target set has the slot."""
    from ..stimuli.slots import with_slot_spans

    moved, found = {}, {}
    for role, frame in sets.items():
        moved[role], found[role] = with_slot_spans(con, frame, test.cword_slot)
    if not (found["x"] or found["y"]):
        raise InputError(f"test {test.name!r}: no stimulus of X or Y has a slot {test.cword_slot!r} "
                         "(c-word:<slot> takes a slot of a multi-slot template set)")
    for role in ("x", "y"):
        if moved[role].height < 2:
            raise InputError(f"test {test.name!r}: set {role.upper()} has {moved[role].height} stimulus with "
                             f"slot {test.cword_slot!r}")
    return moved


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
