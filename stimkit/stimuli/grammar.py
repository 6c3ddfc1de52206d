"""English grammar for stimulus templates: articles, plurals, sentence case, word kinds.

Two grammars, chosen per template set (`templates.TemplateSet.grammar`):

- `may2019`: the rules of the published SEAT generator (May et al. 2019), as read off
  the published sets (`spec/STIMULI.md`), slips included ("childs", "an university"):
  the sets that reproduce a paper keep them, so their stimuli and versions never move;
- `inflect`: the `inflect` library (plurals, singulars and indefinite articles of
  English, irregular nouns included: child -> children, person -> people), for every
  other set, the user's included.

Every filter here accepts text in which the word of interest is *marked* (see `mark`),
so that the renderer can find the word's character span in the finished sentence.
"""

from __future__ import annotations

import functools
import re

# Private-use code points that bracket the word of interest while rendering. A template with
# several slots brackets slot i with MARKERS + 2i and MARKERS + 2i + 1 (slot 0: U+E000, U+E001).
MARKERS, MAX_SLOTS = 0xE000, 64
_ANY_MARKER = re.compile(f"[{chr(MARKERS)}-{chr(MARKERS + 2 * MAX_SLOTS - 1)}]")
_OPENS = [chr(MARKERS + 2 * i) for i in range(MAX_SLOTS)]
_CLOSES = [chr(MARKERS + 2 * i + 1) for i in range(MAX_SLOTS)]
_OPENER = re.compile("[" + "".join(_OPENS) + "]")

KINDS = (
    "name",
    "adjective",
    "verb",
    "mass_noun",
    "count_noun",
    "pronoun_subject",
    "pronoun_object",
    "pronoun_possessive",
)

PERSON_RE = re.compile(
    r"\b(woman|man|female|male|girl|boy|sister|brother|daughter|son|mother|father"
    r"|aunt|uncle|grandmother|grandfather|American)\b"
)
_VOWEL_EXCEPTIONS = ("European", "Ukrainian")
_IRREGULAR_PLURAL = re.compile(r"\b(wo)?man\b")


def mark(text: str, slot: int = 0) -> str:
    return f"{chr(MARKERS + 2 * slot)}{text}{chr(MARKERS + 2 * slot + 1)}"


def refuse_markers(text: str, where: str) -> None:
    """A one-line error naming the line when user text (a template, a phrase, a constraint)
    holds a marker: input that marks its own spans would make them lie."""
    m = _ANY_MARKER.search(text)
    if m is not None:
        line = text.count("\n", 0, m.start()) + 1
        from ..errors import InputError

        raise InputError(f"{where}:{line}: holds U+{ord(m.group()):04X}, a character stimkit uses to mark the word's "
                         "span: take it out")


def markers_in(text: str) -> list[str]:
    return _ANY_MARKER.findall(text)


def slot_of(marker: str) -> int:
    """The slot a marker character brackets."""
    return (ord(marker) - MARKERS) // 2


def is_marker(ch: str) -> bool:
    return MARKERS <= ord(ch) < MARKERS + 2 * MAX_SLOTS


def unmark(text: str) -> str:
    return _ANY_MARKER.sub("", text)


def find_span(rendered: str) -> tuple[str, int | None, int | None]:
    """Strip the markers; return (text, start, end) of the first marked word (end exclusive).
    No span (None, None) when no whole marked word is there (none, or one cut by a slice)."""
    text, spans = find_spans(rendered, 1)
    return (text, *spans[0])


def find_spans(rendered: str, slots: int) -> tuple[str, list[tuple[int | None, int | None]]]:
    """Strip the markers; (text, [(start, end) of each slot's first marked word]), (None, None)
    for a slot with no whole marked word."""
    spans = []
    count = _ANY_MARKER.findall
    for slot in range(slots):
        start = rendered.find(_OPENS[slot])
        end = rendered.find(_CLOSES[slot], start) if start >= 0 else -1
        if end < 0:
            spans.append((None, None))
            continue
        # offsets in the text without markers: less the markers before each
        start -= len(count(rendered, 0, start))
        spans.append((start, end - len(count(rendered, 0, end))))
    return unmark(rendered), spans


def _inner(fn):
    """Apply fn to the (first) marked word if there is one, else to the whole text."""

    def wrapped(text: str) -> str:
        text = str(text)
        m = _OPENER.search(text)
        end = text.find(chr(ord(m.group()) + 1), m.end()) if m else -1
        if end < 0:
            return fn(text)
        return text[: m.end()] + fn(text[m.end():end]) + text[end:]

    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


def article(text: str) -> str:
    """The indefinite article for `text`: 'an' before a vowel letter or 'honor', except European/Ukrainian."""
    plain = unmark(str(text))
    if plain.startswith(_VOWEL_EXCEPTIONS):
        return "a"
    if plain[:1].lower() in "aeiou" or plain.lower().startswith("honor"):
        return "an"
    return "a"


def with_article(text: str) -> str:
    """`text` preceded by its indefinite article: 'an abuse', 'a European American'."""
    return f"{article(text)} {text}"


@_inner
def plural(word: str) -> str:
    """woman/man -> women/men anywhere in the term; consonant+y -> ies; ch/sh/s -> es; else s."""
    if _IRREGULAR_PLURAL.search(word):
        return _IRREGULAR_PLURAL.sub(lambda m: (m.group(1) or "") + "men", word)
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    if word.endswith(("ch", "sh", "s")):
        return word + "es"
    return word + "s"


@_inner
def singular(word: str) -> str:
    """The singular of a word listed in the plural: children -> child, else drop the final s."""
    if word == "children":
        return "child"
    return word[:-1] if word.endswith("s") else word


# ---------------------------------------------------------------- inflect (every other set)

GRAMMARS = ("may2019", "inflect")
PAPER_GRAMMAR = "may2019"   # the published generator's rules: the grammar a set version was made under
                            # before sets could choose one (so it is left out of their version hash)


@functools.lru_cache(maxsize=1)
def _engine():
    import inflect  # here: importing inflect takes about a second, and the paper's sets never need it

    return inflect.engine()


def inflect_article(text: str) -> str:
    """The indefinite article by pronunciation (inflect): 'an hour', 'a university', 'an honest'."""
    plain = unmark(str(text)).strip()
    return _engine().a(plain).split(" ", 1)[0] if plain else "a"


def inflect_with_article(text: str) -> str:
    return f"{inflect_article(text)} {text}"


@_inner
def inflect_plural(word: str) -> str:
    """The plural by inflect: child -> children, person -> people, mouse -> mice, knife -> knives."""
    return (_engine().plural_noun(word) or word) if word.strip() else word


@_inner
def inflect_singular(word: str) -> str:
    """The singular of a plural noun by inflect (children -> child); a word it does not take
    for a plural stays as it is."""
    return (_engine().singular_noun(word) or word) if word.strip() else word


def filters(grammar: str) -> dict:
    """The template filters of a grammar: a, article, plural, singular, capfirst."""
    if grammar == "inflect":
        return {"a": inflect_with_article, "article": inflect_article, "plural": inflect_plural,
                "singular": inflect_singular, "capfirst": capfirst}
    return {"a": with_article, "article": article, "plural": plural, "singular": singular, "capfirst": capfirst}


def forms(text: str, singular_form: str, plural_form: str, given: bool, grammar: str) -> tuple[str, str]:
    """A word's (singular, plural) under a grammar. A word list's own forms (`given`) and the
    paper's grammar keep the forms the list resolved (the paper's rules); under inflect a
    word listed in the plural (children) gets inflect's singular, any other its plural."""
    if grammar == PAPER_GRAMMAR or given:
        return singular_form, plural_form
    if plural_form == text and singular_form != text:  # listed in the plural (the lexicon's plural nouns)
        return inflect_singular(text), text
    return text, inflect_plural(text)


def capfirst(text: str) -> str:
    """Sentence case: upper-case the first letter, leave the rest alone ('European American' stays)."""
    text = str(text)
    for i, ch in enumerate(text):
        if not is_marker(ch):
            return text[:i] + ch.upper() + text[i + 1:]
    return text


def is_person(word: str) -> bool:
    return PERSON_RE.search(word) is not None


def infer_kind(word: str, lexicon: dict[str, frozenset[str]]) -> str:
    """The default kind of an untagged word (spec/STIMULI.md, checked in order)."""
    if word[:1].isupper() and not word.isupper() and not word.endswith("American"):
        return "name"
    for kind in ("adjective", "verb", "mass_noun", "pronoun_subject", "pronoun_object", "pronoun_possessive"):
        if word in lexicon.get(kind, ()):
            return kind
    return "count_noun"
