"""The encoder registry: a spec string -> an Encoder.

    glove-6b-50d                     GloVe 6B 50d (word vector / CBoW)
    minilm                           all-MiniLM-L6-v2 (mean pooling by default)
    use-m3                           Universal Sentence Encoder multilingual v3
    hf:<model id or local path>      any transformers model
    vectors:<path>                   any word2vec / GloVe file
    import:<parquet or csv>          precomputed vectors

Options follow as `,key=value`: `minilm,pooling=cls`, `hf:gpt2,pooling=last`,
`hf:bert-base-uncased,pooling=token,subtoken=mean,layer=sum`, `glove-6b-50d,pooling=token`.
Transformers also take `device=auto|cpu|cuda|cuda:N|mps`, `dtype=auto|float32|bfloat16|float16`,
`batch_tokens=N` (padded tokens per forward pass) or `batch_size=N`, and `max_length=N`.

Every option is checked here, when the encoder is built, without loading a model: a bad
spec is one StimkitError line before anything is written to the store.
"""

from __future__ import annotations

from .. import StimkitError
from .base import Encoded, Encoder

EMBEDDED = ("glove-6b-50d", "minilm", "use-m3")
PREFIXES = ("hf:", "vectors:", "import:")


def parse(spec: str) -> tuple[str, dict[str, str]]:
    head, *opts = spec.split(",")
    options = {}
    for opt in opts:
        key, sep, value = opt.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise StimkitError(f"encoder {spec!r}: option {opt!r} is not key=value")
        if key in options:
            raise StimkitError(f"encoder {spec!r}: option {key!r} given twice")
        options[key] = value.strip()
    return head.strip(), options


def resolve(spec: str) -> Encoder:
    try:
        enc = _build(spec)
    except StimkitError as e:  # a spec with a line break in it still gives a one-line error
        if "\n" not in str(e):
            raise
        raise StimkitError(str(e).replace("\r", "\\r").replace("\n", "\\n")) from None
    enc.requested = spec  # as the user wrote it: what a Ray worker rebuilds the encoder from
    return enc


def _build(spec: str) -> Encoder:
    head, options = parse(spec)
    try:
        if head == "glove-6b-50d":
            from .wordvectors import glove_6b_50d
            return glove_6b_50d(**options)
        if head == "minilm":
            from .transformer import TransformerEncoder, minilm_path
            return TransformerEncoder(minilm_path(), name="minilm", **options)
        if head == "use-m3":
            from .use import UniversalSentenceEncoder
            return UniversalSentenceEncoder(**options)
        if head.startswith("hf:") and head[3:]:
            from .transformer import hf
            return hf(head[3:], **options)
        if head.startswith("vectors:") and head[8:]:
            from .wordvectors import vectors_file
            return vectors_file(head[8:], **options)
        if head.startswith("import:") and head[7:]:
            from .imported import ImportedEncoder
            return ImportedEncoder(head[7:], **options)
    except TypeError as e:  # an option the encoder does not take
        raise StimkitError(f"encoder {spec!r}: {str(e).split('() ')[-1]}") from None
    except (OSError, ValueError, RuntimeError) as e:  # a path the OS refuses, a value that is no number
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise StimkitError(f"encoder {spec!r}: {first}") from None
    raise StimkitError(
        f"unknown encoder {spec!r} (known: {', '.join(EMBEDDED)}, or hf:<model>, vectors:<file>, import:<file>)"
    )


def token_variant(enc: Encoder | str) -> Encoder:
    """The same model pooled at the word the template inserted (Tan & Celis's c-word): pooling=token,
    first sub-token unless the spec says subtoken=mean, its layer kept. `base_spec` remembers the
    spec as named, which results store as the encoder (their context says c-word).

    Refused: sentence-only encoders (USE), imported vectors, and static word vectors, whose
    word has the same vector in every sentence, so c-word would repeat the word test
    (Tan & Celis 2019, Table 7: NA for CBoW)."""
    from .transformer import TransformerEncoder
    from .wordvectors import WordVectorEncoder

    base = resolve(enc) if isinstance(enc, str) else enc
    if isinstance(base, WordVectorEncoder):
        raise StimkitError(f"encoder {base.spec!r}: c-word is not applicable to static word vectors "
                           "(a word's vector is the same in every sentence: run the word-level test)")
    if not isinstance(base, TransformerEncoder):
        raise StimkitError(f"encoder {base.spec!r} cannot give c-word vectors: it has no token vectors "
                           "(c-word needs a transformer, e.g. minilm or hf:<model>)")
    if base.pooling == "token":
        variant = base
    else:
        options = {k: v for k, v in base.options.items() if k != "pooling"}
        variant = TransformerEncoder(base.model_id, name=base.name, pooling="token", subtoken=base.subtoken,
                                     batch_size=base.batch_size, **options)
    variant.base_spec = base.spec
    return variant


__all__ = ["Encoded", "Encoder", "resolve", "parse", "token_variant", "EMBEDDED"]
