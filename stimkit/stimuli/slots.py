"""Templates with several slots: HolisticBias's "I'm a Deaf grandmother." is a descriptor
slot and a noun slot in one template.

A template set becomes multi-slot with `slots` in its `_set.toml` (beside `description`,
`language`, `grammar`; template_sets.SET_KEYS):

    [slots.descriptor]                  # slots in this order; each is a template variable
    lists = ["hb_age_young", "hb_age_old"]   # the word lists that fill it by default
    optional = true                     # also the sentences without it ("I'm a grandmother.")

    [slots.noun]
    lists = ["hb_nouns"]

    [[constraints]]                     # a Jinja expression over the slots, true to keep
    why = "a descriptor with a gender fits only that gender's nouns"
    require = "not (descriptor.gender and noun) or noun.gender == descriptor.gender"

    [[constraints]]
    files = ["must_be_noun"]            # only for these template files
    require = "noun"

    [phrases]                           # rendered once per combination; lines use them: {{ np }}
    np = '{% from "hb/_np.j2" import np %}{{ np(descriptor, noun) }}'

Every template file of the set renders every combination of the slots' words that the
constraints keep (a set named with a file renders that file only). In a template a slot is
its word, marked for its span (`{{ noun }}`, `{{ noun|a }}`), with `.plural`, `.singular`,
`.text` (unmarked), `.kind`, `.person`, `.gender`, `.tags` (the word list's tags) and
`.list`; an absent optional slot is the empty string, false in a condition.

A line that is only text and variables ("I'm {{ np }}.") is joined without Jinja: the phrase
is built once per combination rather than once per line, which is what makes half a million
HolisticBias sentences a matter of seconds.

A set of such a template set names the slot its list fills: `descriptor=hb_age_young@hb`
is every sentence whose descriptor comes from `hb_age_young`, the other slots filled from
their own lists (`descriptor=*@hb`: the slot's declared lists, the whole product). The
stimulus' `word` and span are that slot's; `stimulus_slots` keeps every slot's word and
span, and `context_id` is the template and the other slots' words: what a test balances
between X and Y, and what the crossed model treats as crossed with the words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from .. import StimkitError, store
from . import grammar
from .wordlists import Word

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Names a template cannot take for a slot: Jinja's own words
_RESERVED = {"true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if", "else",
             "loop", "self", "caller", "varargs", "kwargs"}
SLOT_KEYS = {"lists", "optional"}
CONSTRAINT_KEYS = {"require", "why", "files"}
ALL_LISTS = "*"   # `slot=*@set`: the slot's declared lists


@dataclass(frozen=True)
class Slot:
    name: str
    lists: tuple[str, ...]      # the word lists that fill it, unless a set names its own
    optional: bool = False      # the product also holds the sentences without this slot


@dataclass(frozen=True)
class Constraint:
    require: str                        # a Jinja expression over the slots; a combination is kept where true
    why: str = ""
    files: tuple[str, ...] = ()         # the template files it applies to (none: all of them)
    where: str = ""                     # `_set.toml` and its position, for errors


@dataclass(frozen=True)
class Declaration:
    """A multi-slot template set's slots (in order) and constraints, from its `_set.toml`."""
    slots: tuple[Slot, ...]
    constraints: tuple[Constraint, ...] = ()
    path: str = ""
    phrases: tuple[tuple[str, str], ...] = ()   # (name, Jinja source), rendered once per combination

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.slots]

    def slot(self, name: str) -> Slot:
        for s in self.slots:
            if s.name == name:
                return s
        raise StimkitError(f"{self.path}: no slot {name!r} (slots: {', '.join(self.names)})")


def declaration(raw: dict, path: Path) -> Declaration | None:
    """The slots, constraints and phrases of a template set's `_set.toml` (`raw`, its keys
    checked by template_sets.info), checked; None: a one-slot set."""
    if "slots" not in raw:
        extra = next((k for k in ("constraints", "phrases") if k in raw), None)
        if extra:
            raise StimkitError(f"{path}: `{extra}` without slots: declare them, e.g. [slots.noun] lists = [\"nouns\"]")
        return None
    table = raw.get("slots")
    if not isinstance(table, dict) or not table:
        raise StimkitError(f"{path}: declare the slots, e.g. [slots.noun] lists = [\"nouns\"]")
    if len(table) > grammar.MAX_SLOTS:
        raise StimkitError(f"{path}: {len(table)} slots, more than {grammar.MAX_SLOTS}")
    slots = []
    for name, body in table.items():
        where = f"{path}: slot {name!r}"
        if not _NAME.fullmatch(name) or name in _RESERVED:
            raise StimkitError(f"{where}: a slot is named like a template variable (letters, digits, _; not a Jinja word)")
        if not isinstance(body, dict) or set(body) - SLOT_KEYS:
            extra = sorted(set(body) - SLOT_KEYS)[0] if isinstance(body, dict) else None
            raise StimkitError(f"{where}: " + (f"unknown key {extra!r} " if extra else "must be a table ")
                               + f"(known: {', '.join(sorted(SLOT_KEYS))})")
        lists = body.get("lists", [])
        if not isinstance(lists, list) or not all(isinstance(x, str) and x for x in lists):
            raise StimkitError(f"{where}: `lists` must be a list of word-list names")
        if not isinstance(body.get("optional", False), bool):
            raise StimkitError(f"{where}: `optional` must be true or false")
        slots.append(Slot(name, tuple(lists), body.get("optional", False)))
    constraints = []
    entries = raw.get("constraints", [])
    if not isinstance(entries, list):
        raise StimkitError(f"{path}: `constraints` must be an array of tables ([[constraints]])")
    for i, body in enumerate(entries, start=1):
        where = f"{path}: constraint {i}"
        if not isinstance(body, dict) or set(body) - CONSTRAINT_KEYS or not isinstance(body.get("require"), str):
            raise StimkitError(f"{where}: a table with `require` (a Jinja expression), optional `why` and `files`")
        files = body.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
            raise StimkitError(f"{where}: `files` must be a list of template file names")
        constraints.append(Constraint(body["require"], str(body.get("why", "")), tuple(files), where))
    phrases = raw.get("phrases", {})
    if not isinstance(phrases, dict) or not all(isinstance(v, str) for v in phrases.values()):
        raise StimkitError(f"{path}: [phrases] holds names = Jinja templates (strings)")
    for name in phrases:
        if not _NAME.fullmatch(name) or name in _RESERVED or name in table:
            raise StimkitError(f"{path}: phrase {name!r}: a phrase is named like a template variable, not like a slot")
    return Declaration(tuple(slots), tuple(constraints), str(path), tuple(phrases.items()))


class SlotValue(str):
    """A slot's word as a template sees it: the word, marked for its span (so `{{ noun }}`,
    `{{ noun|a }}` and `{{ noun.plural }}` locate it in the sentence), with the word's
    attributes. An absent optional slot is the empty string: false in a condition."""

    def __new__(cls, word: Word | None, index: int, wordlist: str = ""):
        self = super().__new__(cls, grammar.mark(word.text, index) if word is not None else "")
        self.text = word.text if word is not None else ""
        self.singular = grammar.mark(word.singular, index) if word is not None else ""
        self.plural = grammar.mark(word.plural, index) if word is not None else ""
        self.kind = word.kind if word is not None else None
        self.person = word.person if word is not None else None
        self.gender = word.gender if word is not None else None
        self.tags = dict(word.tags) if word is not None else {}
        self.list = wordlist
        return self


@dataclass(frozen=True)
class Filler:
    """One word that can fill a slot: from which list, at which position (None: absent)."""
    wordlist: str = ""
    ordinal: int = -1
    word: Word | None = None


@dataclass
class Fills:
    """What fills each slot of one set: the set's own slot first (its words are the set's
    words), then the others in declared order."""
    order: list[Slot]
    fillers: dict[str, list[Filler]] = field(default_factory=dict)
    lists: dict[str, list[str]] = field(default_factory=dict)


def fills(decl: Declaration, own_slot: str, wordlist: str, wordlists: dict, set_name: str) -> Fills:
    """The fillers of every slot for the set `own_slot=wordlist@...`: the named slot from that
    list (never absent), or, with `*`, from its declared lists like the others."""
    from ..choices import suggest

    own = decl.slot(own_slot)
    order = [own] + [s for s in decl.slots if s.name != own_slot]
    out = Fills(order)
    for s in order:
        named = s.name == own_slot and wordlist != ALL_LISTS
        lists = [wordlist] if named else list(s.lists)
        if not lists:
            raise StimkitError(f"set {set_name!r}: slot {s.name!r} has no word lists ({decl.path}: give it `lists`)")
        for name in lists:
            if name not in wordlists:
                raise StimkitError(f"set {set_name!r}: slot {s.name!r}: unknown word list {name!r}{suggest(name, wordlists)}")
            if not wordlists[name].words:
                raise StimkitError(f"set {set_name!r}: word list {name!r} has no words")
        out.lists[s.name] = lists
        out.fillers[s.name] = [Filler(n, i, w) for n in lists for i, w in enumerate(wordlists[n].words)]
        if s.optional and not named:
            out.fillers[s.name].append(Filler())
    return out


# --------------------------------------------------------------------------- selected frames

def with_slot_spans(con, frame: pl.DataFrame, slot: str) -> tuple[pl.DataFrame, bool]:
    """The frame with each stimulus' span moved to `slot`'s word (c-word on a named slot), and
    whether any stimulus has that slot. A stimulus of a multi-slot set without that slot (an
    absent optional slot) is left out; a stimulus of a set without slots keeps its own span."""
    from ..store import frame as query

    if "set_version" not in frame.columns or "ordinal" not in frame.columns or frame.height == 0:
        return frame, False
    keys = frame.select(pl.col("set_version").cast(pl.String), pl.col("ordinal").cast(pl.Int32)).with_row_index("_row")
    con.register("_wanted_slots", keys.to_arrow())
    try:
        found = query(con, """
            SELECT w._row, s.span_start AS _start, s.span_end AS _end, s.slot IS NOT NULL AS _has,
                   w.set_version IN (SELECT set_version FROM stimulus_slots) AS _multi
            FROM _wanted_slots w
            LEFT JOIN stimulus_slots s ON s.set_version = w.set_version AND s.ordinal = w.ordinal AND s.slot = ?
            ORDER BY w._row""", [slot])
    finally:
        con.unregister("_wanted_slots")
    moved = frame.with_columns(
        span_start=pl.when(found["_has"]).then(found["_start"]).otherwise(frame["span_start"].cast(pl.Int32)),
        span_end=pl.when(found["_has"]).then(found["_end"]).otherwise(frame["span_end"].cast(pl.Int32)))
    keep = found["_has"] | ~found["_multi"]
    return moved.filter(keep), bool(found["_has"].any())


def row_slots(con, frames: list[pl.DataFrame]) -> dict:
    """{(set_version, ordinal): {slot: (wordlist, word)}} of the rows of selected sets that come
    from a multi-slot template set (stimulus_slots); {} without any."""
    frames = [f for f in frames if {"set_version", "ordinal"} <= set(f.columns)]
    keys = pl.concat([f.select(pl.col("set_version").cast(pl.String), pl.col("ordinal").cast(pl.Int32))
                      for f in frames], how="vertical") if frames else None
    if keys is None or keys.height == 0:
        return {}
    con.register("_slot_rows", keys.unique().to_arrow())
    try:
        found = store.rows(con, "SELECT s.set_version, s.ordinal, s.slot, s.wordlist, s.word FROM stimulus_slots s "
                                "JOIN _slot_rows k ON k.set_version = s.set_version AND k.ordinal = s.ordinal")
    finally:
        con.unregister("_slot_rows")
    out: dict = {}
    for version, ordinal, slot, wordlist, word in found:
        out.setdefault((version, ordinal), {})[slot] = (wordlist, word)
    return out
