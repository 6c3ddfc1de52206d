"""The language and provenance of stimuli, and the grammatical gender of target words.

Every word list, template set and imported set has a language, a BCP 47 tag (`en`, `de`,
`pt-BR`, `zh-Hans`; checked and written in its standard form by `langcodes`: `EN_us` ->
`en-US`, `tl` -> `fil`, `iw` -> `he`), `en` unless it says otherwise. Two tags are the same
language when their primary language subtags are (`de` and `de-CH`; `zh-Hans` and
`zh-Hant`). A template set may declare `*` instead: it adds no words of its own (the bare
word of `templates/word`), so it serves a list in any language.

Provenance says where the words come from: `source` (the citation, as word lists have it),
`translation` (`original`: written in this language; `human` or `machine` translation;
`mixed`: human and machine translations pooled, as WEATHub's `_all` folders), the language
it was translated from, and the licence. A set version's hash covers the language and the
provenance (bar the citation, which describes and is not hashed, like a list's
`description`) when they are not the defaults, so every set made before stays the version
it was.

A word's grammatical gender (`grammatical_gender = "feminine"`: masculine, feminine,
neuter, common) is not its natural gender (`gender = "female"`, which picks the pronouns
he/she): "das Mädchen" is a girl and neuter. Omrani Sabbaghi & Caliskan (2022) found that
when target sets differ in grammatical gender composition, WEAT partly measures grammatical
gender (disentangling it lowered d by 1.3 in French, German and Italian):
`gender_composition` says whether X and Y differ, for `check`, `test` and diagnostics.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import product
from math import lgamma

from ..errors import InputError

DEFAULT_LANGUAGE = "en"
ANY = "*"  # a template set with no words of its own serves any language
TRANSLATIONS = ("original", "human", "machine", "mixed")
# Languages whose articles and plurals the template filters (a, article, plural, singular)
# and the pronoun variables (he, him, his) produce: stimuli.grammar is English. A list in any
# other language gives its forms in the list (`plural = ...`) and its templates use them.
INFLECTED = frozenset({"en"})
GRAMMATICAL_GENDERS = ("masculine", "feminine", "neuter", "common")
# X and Y count as differing in grammatical gender composition from this total variation
# distance between their shares on: a fifth of the words would have to change gender to match.
IMBALANCE = 0.2


def normalise(tag, where: str, allow_any: bool = False) -> str:
    """`tag` as a standard BCP 47 tag, or a one-line error naming `where`."""
    import langcodes

    if allow_any and tag == ANY:
        return ANY
    text = tag.strip() if isinstance(tag, str) else ""
    if not text or not langcodes.tag_is_valid(text):
        also = " or \"*\" (any language)" if allow_any else ""
        raise InputError(f"{where}: language {tag!r} is not a BCP 47 tag (e.g. en, de, pt-BR, zh-Hans){also}")
    return langcodes.standardize_tag(text)


def primary(tag: str) -> str:
    """The primary language subtag of a standard tag: `de-CH` -> `de` (`*` stays `*`)."""
    return tag.split("-")[0].lower()


def same_language(a: str, b: str) -> bool:
    return ANY in (a, b) or primary(a) == primary(b)


def inflected(tag: str) -> bool:
    """Whether the template filters make this language's articles and plurals."""
    return primary(tag) in INFLECTED


@dataclass(frozen=True)
class Provenance:
    """The language of a set of words and where they come from."""
    language: str = DEFAULT_LANGUAGE
    translation: str = "original"
    translated_from: str | None = None
    licence: str | None = None
    source: str = ""  # the citation (a word list's `source`): described, not hashed

    KEYS = ("language", "translation", "translated_from", "licence")

    @classmethod
    def parse(cls, table: dict, where: str, source: str = "") -> Provenance:
        """From a word list's keys (language, translation, translated_from, licence), checked."""
        language = normalise(table["language"], where) if "language" in table else DEFAULT_LANGUAGE
        translation = table.get("translation", "original")
        if translation not in TRANSLATIONS:
            raise InputError(f"{where}: translation must be one of {', '.join(TRANSLATIONS)}, not {translation!r}")
        origin = table.get("translated_from")
        if origin is not None:
            if translation == "original":
                raise InputError(f"{where}: translated_from needs translation = \"human\", \"machine\" or \"mixed\"")
            origin = normalise(origin, f"{where}: translated_from")
        licence = table.get("licence")
        if licence is not None and (not isinstance(licence, str) or not licence.strip()):
            raise InputError(f"{where}: licence must be a non-empty string (an SPDX id such as CC-BY-4.0)")
        return cls(language, translation, origin, licence.strip() if licence else None, source)

    def hashed(self) -> dict | None:
        """What a set version's hash adds for this provenance: nothing for the defaults."""
        values = {k: getattr(self, k) for k in self.KEYS}
        return None if values == {k: getattr(Provenance, k) for k in self.KEYS} else values

    def columns(self) -> dict:
        """The stimulus_sets columns (db/016_language.sql)."""
        return {**{k: getattr(self, k) for k in self.KEYS}, "citation": self.source or None}


def language_of(test: str, sets: dict[str, tuple[str, list[str]]], cross_lingual: bool = False) -> str | None:
    """The language of a test from its four sets, {role: (set name, languages of its set
    versions)}: one language, or for a test declared cross-lingual the targets' and the
    attributes' ("en+de"). A set whose language is unknown (a SELECT without set versions)
    is not counted; None when no set's is known. Sets in different languages are refused in
    one line naming them, unless the test is cross-lingual; a cross-lingual test still has
    its two targets in one language and its two attributes in one."""
    def label(roles) -> str:
        return ",".join(sorted({t for r in roles for t in sets[r][1]}))

    def mixed(roles) -> bool:
        return len({primary(t) for r in roles for t in sets[r][1]}) > 1

    def named(roles) -> str:
        return ", ".join(f"{r.upper()} {sets[r][0]} ({label([r]) or 'unknown'})" for r in roles)

    roles = [r for r in ("x", "y", "a", "b") if sets[r][1]]
    if not roles:
        return None
    if not mixed(roles):
        return label(roles)
    if not cross_lingual:
        raise InputError(f"test {test!r}: its sets are in different languages: {named('xyab')}; a test across "
                         "languages must say so (cross_lingual = true in its definition; --cross-lingual for an "
                         "ad-hoc test)")
    for pair in (["x", "y"], ["a", "b"]):
        if mixed([r for r in pair if r in roles]):
            raise InputError(f"test {test!r} is cross-lingual, but its {'targets' if pair[0] == 'x' else 'attributes'} "
                             f"differ in language: {named(pair)} (targets in one language, attributes in one)")
    return "+".join(x for x in (label(r for r in "xy" if r in roles), label(r for r in "ab" if r in roles)) if x)


def covers(declared: frozenset[str] | None, language: str) -> bool:
    """Whether an encoder declared for `declared` languages (None: any) reads `language`
    ("en+de": every language of a cross-lingual test)."""
    if declared is None:
        return True
    known = {primary(d) for d in declared}
    return all(primary(t) in known for part in language.split("+") for t in part.split(","))


# --------------------------------------------------------------------------- grammatical gender

@dataclass(frozen=True)
class GenderComposition:
    """How X's and Y's words divide by grammatical gender (marked words only)."""
    x: dict[str, int]
    y: dict[str, int]
    unmarked_x: int
    unmarked_y: int
    distance: float | None   # total variation distance of the shares: 0 the same composition, 1 disjoint
    p_value: float | None    # exact test that X and Y draw on one composition (Freeman-Halton)
    imbalanced: bool         # distance >= IMBALANCE

    def text(self) -> str:
        def side(counts, unmarked):
            parts = [f"{counts[g]} {g}" for g in GRAMMATICAL_GENDERS if counts.get(g)]
            return ", ".join(parts + ([f"{unmarked} unmarked"] if unmarked else [])) or "none"

        head = f"X {side(self.x, self.unmarked_x)}; Y {side(self.y, self.unmarked_y)}"
        if self.distance is None:
            return head
        return f"{head}; share distance {self.distance:.2f}, exact p {self.p_value:.3g}"


def gender_composition(x, y, threshold: float = IMBALANCE) -> GenderComposition | None:
    """The grammatical gender composition of the target words X and Y (each a sequence of
    genders, None for an unmarked word), the total variation distance between their shares,
    and the Freeman-Halton exact p-value of the 2 x k table (for two genders, Fisher's exact
    test). None when no word of either set is marked."""
    gx, gy = Counter(g for g in x if g), Counter(g for g in y if g)
    unknown = set(gx) | set(gy)
    if not unknown:
        return None
    bad = unknown - set(GRAMMATICAL_GENDERS)
    if bad:
        raise InputError(f"unknown grammatical gender {sorted(bad)[0]!r} (known: {', '.join(GRAMMATICAL_GENDERS)})")
    ux, uy = sum(g is None for g in x), sum(g is None for g in y)
    nx, ny = sum(gx.values()), sum(gy.values())
    if not nx or not ny:
        return GenderComposition(dict(gx), dict(gy), ux, uy, None, None, False)
    genders = [g for g in GRAMMATICAL_GENDERS if gx[g] or gy[g]]
    distance = 0.5 * sum(abs(gx[g] / nx - gy[g] / ny) for g in genders)
    p = freeman_halton([gx[g] for g in genders], [gy[g] for g in genders])
    return GenderComposition(dict(gx), dict(gy), ux, uy, distance, p, distance >= threshold - 1e-12)


def freeman_halton(row1: list[int], row2: list[int]) -> float:
    """Exact p-value of independence in a 2 x k table (Freeman & Halton 1951): the
    probability, given the margins, of every table no more probable than the observed one.
    Tables are enumerated by their first row (bounded by the column totals)."""
    cols = [a + b for a, b in zip(row1, row2)]
    n1 = sum(row1)

    def log_p(first) -> float:  # multivariate hypergeometric, up to the constant C(N, n1)
        return sum(lgamma(c + 1) - lgamma(a + 1) - lgamma(c - a + 1) for a, c in zip(first, cols))

    observed = log_p(row1)
    total = hit = 0.0
    from math import exp

    for head in product(*(range(c + 1) for c in cols[:-1])):
        last = n1 - sum(head)
        if not 0 <= last <= cols[-1]:
            continue
        q = exp(log_p((*head, last)) - observed)
        total += q
        if q <= 1 + 1e-7:
            hit += q
    return min(1.0, hit / total)
