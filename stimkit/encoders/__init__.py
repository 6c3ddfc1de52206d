"""The encoder registry: a spec string -> an Encoder.

    glove-6b-50d                     GloVe 6B 50d (word vector / CBoW)
    minilm                           all-MiniLM-L6-v2 (mean pooling by default)
    use-m3                           Universal Sentence Encoder multilingual v3
    hf:<model id or local path>      any transformers model (encoder or decoder)
    st:<model id or local path>      a sentence-transformers model, through its own pipeline
    vectors:<path>                   any word2vec / GloVe file
    import:<parquet or csv>          precomputed vectors
    trained:<name>/seed-K, /boot-K   word vectors trained on a corpus (`stimkit train`), from the store
    smollm2-135m                     SmolLM2-135M-Instruct, a causal LM that scores texts (encoders.scoring)
    hf:<model>,score=causal|pll      any causal or masked LM as a scoring encoder (log-probabilities)

Options follow as `,key=value`: `minilm,pooling=cls`, `hf:gpt2,pooling=last`,
`hf:bert-base-uncased,pooling=token,subtoken=mean,layer=sum`, `glove-6b-50d,pooling=token`.
`debias=<method>[:<dimension>]` derives a debiased encoder from any of them
(`glove-6b-50d,debias=hard`, `minilm,debias=sentencedebias:gender`: see encoders.debias).
Transformers also take `device=auto|cpu|cuda|cuda:N|mps`, `dtype=auto|float32|bfloat16|float16`,
`batch_tokens=N` (padded tokens per forward pass) or `batch_size=N`, and `max_length=N`.

Decoders take `pooling=last|eos` (the last real token whatever the padding side; eos appends
the EOS token first), `padding=left|right`, `template="Instruct: ...\\nQuery: {text}"` or
`prompt_text="query: "` (text around every stimulus) with `include_prompt=false` to leave the
template's tokens out of mean/max pooling, and `device_map=auto` (needs accelerate) for a model
larger than one GPU. `layer=all` sweeps every hidden layer in one forward pass: the vectors of
each layer are stored under the fingerprint of `layer=<i>` (see `layers`).
`st:` takes `prompt=<name>` (one of the model's named prompts) or `prompt_text="..."`.

Languages: an encoder reads the languages it declares (`Encoder.languages`), and a test in
another language is refused on it in one line, not run on out-of-vocabulary words. The
embedded ones declare theirs: glove-6b-50d and minilm English, use-m3 any (it is
multilingual). Every other encoder reads any language unless its spec declares some with
`lang=`: `vectors:cc.de.300.vec,lang=de`, `hf:<model>,lang=en+fr`, or `minilm,lang=*` to run
one on any language on purpose. `lang` is no option of the model: it changes neither the
vectors nor the fingerprint.

A value in double quotes may hold commas; inside it `\\"`, `\\\\` and `\\n` are a quote, a
backslash and a line break. `NAME=SPEC` gives the encoder a display name (`MiniLM=minilm`),
shown in tables and figures and never part of the fingerprint: the fingerprint is the content
of the model (its files, and the options that change vectors), not the spec's spelling.

Every option is checked here, when the encoder is built, without loading a model: a bad
spec is one StimkitError line before anything is written to the store.
"""

from __future__ import annotations

import re

from ..choices import suggest
from .. import StimkitError
from .base import Encoded, Encoder, EncoderWarning

EMBEDDED = ("glove-6b-50d", "minilm", "use-m3", "smollm2-135m")
PREFIXES = ("hf:", "st:", "vectors:", "import:", "trained:")
# NAME=SPEC: a display name has no ':', '/', ',', '=' or quote, so no spec is read as one
DISPLAY = re.compile(r"\s*([^:/,=\"]+?)\s*=(?!=)(.+)", re.S)
ESCAPES = {'"': '"', "\\": "\\", "n": "\n"}
# what str.splitlines breaks at: outside a quoted value a spec is one line (a display name, an
# option and a model name print on one line in every table and error)
LINE_BREAK = re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
QUOTED = re.compile(r'"(?:\\.|[^"\\])*"', re.S)


def split_display(spec: str) -> tuple[str | None, str]:
    """`NAME=SPEC` -> (NAME, SPEC); a spec without a display name -> (None, spec)."""
    match = DISPLAY.fullmatch(spec)
    if match and "," not in match.group(1):
        return match.group(1), match.group(2).strip()
    return None, spec


def _split_options(spec: str) -> list[str]:
    """Split on commas outside double quotes; quoted parts lose their quotes and escapes."""
    parts, current, quoted, i = [], [], False, 0
    while i < len(spec):
        c = spec[i]
        if quoted and c == "\\" and i + 1 < len(spec) and spec[i + 1] in ESCAPES:
            current.append(ESCAPES[spec[i + 1]])
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    if quoted:
        raise StimkitError(f"encoder {spec!r}: a double quote is not closed")
    parts.append("".join(current))
    return parts


def parse(spec: str) -> tuple[str, dict[str, str]]:
    head, *opts = _split_options(spec) if '"' in spec else spec.split(",")
    options = {}
    for opt in opts:
        key, sep, value = opt.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise StimkitError(f"encoder {spec!r}: option {opt!r} is not key=value")
        if key in options:
            raise StimkitError(f"encoder {spec!r}: option {key!r} given twice")
        options[key] = value if '"' in spec and key in ("template", "prompt_text") else value.strip()
    return head.strip(), options


def resolve(spec: str, con=None) -> Encoder:
    """The encoder of a spec; `con`: the store's connection, which a `trained:` encoder reads
    its vectors from (encoders.trained; without it such a spec is refused in one line)."""
    if LINE_BREAK.search(QUOTED.sub("", spec)):  # a quoted template may hold one; nothing else may
        raise StimkitError(f"encoder {spec!r}: a line break outside a quoted value (a spec is one line)")
    display, inner = split_display(spec)
    try:
        enc = _build(inner, con)
    except StimkitError as e:  # a spec with a line break in it still gives a one-line error
        if "\n" not in str(e):
            raise
        raise StimkitError(str(e).replace("\r", "\\r").replace("\n", "\\n")) from None
    enc.requested = inner  # as the user wrote it: what a Ray worker rebuilds the encoder from
    enc.display = display
    return enc


def layers(enc: Encoder) -> list[Encoder]:
    """The encoders whose vectors an encode of `enc` stores, one per result the run layer makes:
    [enc] itself, or for `layer=all` one encoder per hidden layer (`layer=0` the embeddings ..
    `layer=L` the top), each with the fingerprint of that single-layer spec. Encoding `enc`
    (embeddings.encode_missing) fills all of them in one forward pass per batch."""
    return enc.layer_encoders()


# The languages the embedded encoders were trained on (None: multilingual; use-m3 reads any,
# trained on 16: ar, de, en, es, fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh-Hans, zh-Hant).
EMBEDDED_LANGUAGES = {"glove-6b-50d": frozenset({"en"}), "minilm": frozenset({"en"}), "use-m3": None,
                      "smollm2-135m": frozenset({"en"})}


def _build(spec: str, con=None) -> Encoder:
    head, options = parse(spec)
    declared = options.pop("lang", None)
    recipe = None
    if any(k.startswith("debias") for k in options):  # a debiased encoder: its own options, the base's the rest
        from .debias import parse_options
        options, recipe = parse_options(spec, options)
    enc = _construct(spec, head, options, con)
    if recipe is not None:
        from .debias import derive
        enc = derive(enc, recipe, spec)
    if declared is not None:
        enc.languages = declared_languages(declared, spec)
    elif head in EMBEDDED_LANGUAGES:
        enc.languages = EMBEDDED_LANGUAGES[head]
    return enc


def declared_languages(value: str, spec: str) -> frozenset[str] | None:
    """`lang=en`, `lang=en+de` (BCP 47 tags; their primary subtags are kept), `lang=*` (any)."""
    from ..stimuli.language import ANY, normalise, primary

    if value.strip() == ANY:
        return None
    return frozenset(primary(normalise(t, f"encoder {spec!r}: lang")) for t in value.split("+"))


def _construct(spec: str, head: str, options: dict, con=None) -> Encoder:
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
        if head == "smollm2-135m":  # a language model that scores texts (encoders.scoring)
            from .scoring import smollm2
            return smollm2(**options)
        if head.startswith("hf:") and head[3:] and "score" in options:
            from .scoring import hf_scoring
            return hf_scoring(head[3:], **options)
        if head.startswith("hf:") and head[3:]:
            from .transformer import hf
            return hf(head[3:], **options)
        if head.startswith("st:") and head[3:]:
            from .sentence import st
            return st(head[3:], **options)
        if head.startswith("vectors:") and head[8:]:
            from .wordvectors import vectors_file
            return vectors_file(head[8:], **options)
        if head.startswith("import:") and head[7:]:
            from .imported import ImportedEncoder
            return ImportedEncoder(head[7:], **options)
        if head.startswith("trained:") and head[8:]:
            from .trained import trained
            return trained(con, head[8:], **options)
    except TypeError as e:  # an option the encoder does not take
        raise StimkitError(f"encoder {spec!r}: {str(e).split('() ')[-1]}") from None
    except (OSError, ValueError, RuntimeError) as e:  # a path the OS refuses, a value that is no number
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise StimkitError(f"encoder {spec!r}: {first}") from None
    raise StimkitError(
        f"unknown encoder {spec!r}{suggest(spec.split(',')[0], EMBEDDED)} (known: {', '.join(EMBEDDED)}, or hf:<model>[,score=causal|pll], "
        "st:<model>, vectors:<file>, import:<file>, trained:<name>/seed-K)"
    )


def token_variant(enc: Encoder | str) -> Encoder:
    """The same model pooled at the word the template inserted (Tan & Celis's c-word): pooling=token,
    first sub-token unless the spec says subtoken=mean, its layer kept. `base_spec` remembers the
    spec as named, which results store as the encoder (their context says c-word).

    Refused: sentence-only encoders (USE), imported vectors, and static word vectors, whose
    word has the same vector in every sentence, so c-word would repeat the word test
    (Tan & Celis 2019, Table 7: NA for CBoW)."""
    from .sentence import SentenceTransformerEncoder
    from .transformer import TransformerEncoder
    from .wordvectors import WordVectorEncoder

    base = resolve(enc) if isinstance(enc, str) else enc
    if isinstance(base, SentenceTransformerEncoder):  # its modules pool whole sentences
        raise StimkitError(f"encoder {base.spec!r}: c-word is refused for a sentence-transformers pipeline (st:): "
                           f"its modules pool the sentence; use hf:{base.model_id},pooling=token for its token vectors")
    if base.layer == "all" if isinstance(base, TransformerEncoder) else False:
        raise StimkitError(f"encoder {base.spec!r}: c-word takes one layer, not layer=all")
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
        variant = base.with_options(pooling="token", subtoken=base.subtoken)
    variant.base_spec = base.spec
    variant.display = getattr(base, "_display", None)
    return variant


__all__ = ["Encoded", "Encoder", "EncoderWarning", "resolve", "parse", "split_display", "layers", "token_variant",
           "EMBEDDED"]
