"""The product of a multi-slot template set (stimuli.slots), rendered: which combinations of
slot words its constraints keep, its phrases built once per combination, every template line
over them, and each sentence's slots and spans, a chunk of rows at a time. generate.py stores
what this yields; a set's version comes from its inputs, never from the rows."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from typing import Iterator

from .. import StimkitError
from ..choices import suggest
from . import slots as slotting
from .sandbox import begin
from .sets import SetSpec
from .limits import Limits
from .templates import TemplateSet, deadlines, refuse_marker_literals
from .wordlists import WordList

# A multi-slot set's stimuli rows (the set's own slot's word and span) and its rows of
# stimulus_slots (every slot's word and span), as rows() yields them.
STIMULUS_COLUMNS = ("ordinal", "wordlist", "word_ordinal", "word", "kind", "person", "template_id", "template_text",
                    "stimulus", "span_start", "span_end", "context_id")
SLOT_COLUMNS = ("ordinal", "slot", "wordlist", "word", "span_start", "span_end", "context_id")
SLOT_WORD_COLUMNS = ("slot", "wordlist", "word_ordinal", "word", "kind", "gender", "tags")

CHUNK = 1 << 16   # stimuli rendered and appended at a time


class SlotPlan:
    """What a multi-slot set is made of: its fillers, template lines, constraints and phrases,
    and the combinations of slot words the constraints keep (with the files each may use).
    `limits`: the bounds on its size and on each render (the caller's: a Store's)."""

    def __init__(self, spec: SetSpec, wordlists: dict[str, WordList], tset: TemplateSet, limits: Limits = Limits()):
        self.limits = limits
        decl = self.decl = tset.declaration
        if spec.slot is None:
            raise StimkitError(f"set {spec.name!r}: template set {tset.name!r} has slots {', '.join(decl.names)}: name "
                               f"the slot the list fills, e.g. {decl.names[0]}={spec.wordlist}@{spec.name.partition('@')[2]}")
        if spec.slot not in decl.names:
            raise StimkitError(f"set {spec.name!r}: template set {tset.name!r} has no slot {spec.slot!r} "
                               f"(slots: {', '.join(decl.names)}){suggest(spec.slot, decl.names)}")
        self.spec, self.tset = spec, tset
        self.fill = slotting.fills(decl, spec.slot, spec.wordlist, wordlists, spec.name)
        self.names = [s.name for s in self.fill.order]
        self.check_size(limits)  # before a word is inflected or a line rendered
        wordlists = _inflected(wordlists, {spec.wordlist, *(n for s in decl.slots for n in s.lists)}, tset, spec.name)
        self.fill = slotting.fills(decl, spec.slot, spec.wordlist, wordlists, spec.name)
        self.names = [s.name for s in self.fill.order]                   # the set's slot first
        self.marks = {n: decl.names.index(n) for n in self.names}         # marker pair by declared position
        self.files = [tset.file_for(None, spec.template_file)] if spec.template_file else tset.file_names
        self.templates = {f: tset.templates(f) for f in self.files}
        self.checks = _constraints(decl, tset, self.files)
        self.phrases, self.phrase_files = phrases_of(decl, tset)
        self.lists = {n: wordlists[n] for n in dict.fromkeys(x for name in self.names for x in self.fill.lists[name])}
        self.first_list = self.lists[self.fill.lists[spec.slot][0]]
        self.n_words = sum(f.word is not None for f in self.fill.fillers[spec.slot])

    def count(self) -> int:
        """How many sentences `rows` makes, without rendering a line: the combinations the
        constraints keep times the lines of the files they keep (a line that renders empty,
        which HolisticBias's do not, would make it fewer)."""
        lines = {f: len(ts) for f, ts in self.templates.items()}
        return sum(lines[f] for *_, files in self.combinations(self.limits, phrases=False) for f in files)

    def slot_words(self) -> dict[str, list]:
        """The words that fill each slot, once each, with their tags (the slot_words table)."""
        return _columns([(n, f.wordlist, f.ordinal, f.word.text, f.word.kind, f.word.gender,
                          json.dumps(dict(f.word.tags)) if f.word.tags else None)
                         for n in self.names for f in self.fill.fillers[n] if f.word is not None], SLOT_WORD_COLUMNS)

    def rows(self, chunk: int = CHUNK) -> Iterator[tuple[dict, dict]]:
        """(STIMULUS_COLUMNS, SLOT_COLUMNS) for `chunk` stimuli at a time: every
        template line of every file over the product of the slots' words that the constraints
        keep, the set's own slot outermost, its word and span the stimulus'."""
        spec, names, limits = self.spec, self.names, self.limits
        marks = [self.marks[n] for n in names]  # each slot's marker pair: its declared position
        stimuli, slotted, per_line = [], [], dict.fromkeys((t.id for ts in self.templates.values() for t in ts), 0)
        ordinal = 0
        with deadlines():
            for combo, ctx, words, what, files in self.combinations(limits):
                own = combo[0].word
                head = (combo[0].wordlist, combo[0].ordinal, words[0], own.kind if own else "absent",
                        own.person if own else None)
                present = [i for i, f in enumerate(combo) if f.word is not None]
                # " | noun=woman": the other slots' words, the same for every line of this combination
                others = [" | " + " | ".join(f"{n}={w}" for j, (n, w) in enumerate(zip(names, words)) if j != i)
                          if len(names) > 1 else "" for i in range(len(names))]
                produced = 0
                for file in files:
                    for template in self.templates[file]:
                        rendered = template.render_slots(ctx, names, limits, what, marks)
                        if rendered is None:
                            continue
                        produced += 1
                        per_line[template.id] += 1
                        if per_line[template.id] > limits.per_template:
                            raise StimkitError(f"set {spec.name!r}: template line {template.id} yields over "
                                               f"{limits.per_template} sentences ({limits.how_to_raise('per_template')})")
                        if ordinal >= limits.per_set:
                            raise StimkitError(f"set {spec.name!r}: over {limits.per_set} sentences (at {what}, "
                                               f"{template.id}; {limits.how_to_raise('per_set')})")
                        text, spans = rendered
                        stimuli.append((ordinal, *head, template.id, template.text, text, *spans[0],
                                        template.id + others[0]))
                        for i in present:
                            slotted.append((ordinal, names[i], combo[i].wordlist, words[i], *spans[i],
                                            template.id + others[i]))
                        ordinal += 1
                if files and not produced:
                    raise StimkitError(f"{self.tset.path}: every line renders empty for {what} (set {spec.name!r})")
                if len(stimuli) >= chunk:
                    yield _columns(stimuli, STIMULUS_COLUMNS), _columns(slotted, SLOT_COLUMNS)
                    stimuli, slotted = [], []
        if stimuli or not ordinal:
            yield _columns(stimuli, STIMULUS_COLUMNS), _columns(slotted, SLOT_COLUMNS)

    def size(self) -> int:
        """The combinations of slot words before the constraints: the product of the slots' fillers."""
        return math.prod(len(self.fill.fillers[n]) for n in self.names)

    def check_size(self, limits) -> None:
        """Refuse, before any work, a product over the limit (three slots of 5,000 words are
        1.25e11 combinations: two months at the speed constraints are checked)."""
        size = self.size()
        if size > limits.combinations:
            sizes = " x ".join(f"{n} {len(self.fill.fillers[n]):,}" for n in self.names)
            raise StimkitError(f"set {self.spec.name!r}: {size:,} combinations of slot words ({sizes}), over "
                               f"{limits.combinations:,} ({limits.how_to_raise('combinations')})")

    def combinations(self, limits, phrases: bool = True):
        """(fillers, template context, words, what (for errors), files) for every combination
        the constraints keep, the set's slot outermost; the phrases rendered into the context.

        A constraint is checked as soon as the slots it reads are filled (`require = "a.text ==
        'x'"` once per word of `a`, not once per combination), so a prefix it refuses is never
        extended; a set whose constraints keep no combination is an error naming them."""
        names, n = self.names, len(self.names)
        values = [[slotting.SlotValue(f.word, self.marks[name], f.wordlist) for f in self.fill.fillers[name]]
                  for name in names]
        fillers = [self.fill.fillers[name] for name in names]
        # the checks due at each depth (once slot `depth` is filled): on every file, or on one file
        at: list[list] = [[] for _ in range(n)]
        for key, checks in self.checks.items():
            for check in checks:
                at[_depth(check[0], names, self.tset.env)].append((key, check))
        refused: dict = {}
        kept = 0
        combo, ctx = [None] * n, {}

        def extend(depth: int, files: tuple):
            nonlocal kept
            for filler, value in zip(fillers[depth], values[depth]):
                combo[depth], ctx[names[depth]] = filler, value
                alive = files
                what = None
                for key, check in at[depth]:
                    if key is not None and key not in alive:
                        continue
                    what = what or _what(names[:depth + 1], combo)
                    if not _holds(check, ctx, what):
                        refused[check[0]] = refused.get(check[0], 0) + 1
                        alive = () if key is None else tuple(f for f in alive if f != key)
                        if not alive:
                            break
                if not alive:
                    continue
                if depth + 1 < n:
                    yield from extend(depth + 1, alive)
                    continue
                kept += 1
                words = [f.word.text if f.word is not None else "" for f in combo]
                out = dict(ctx)
                what = _what(names, combo)
                if phrases:  # once per combination, not once per line
                    out.update((p.id, p._generate(out, limits, what)) for p in self.phrases)
                yield list(combo), out, words, what, list(alive)

        yield from extend(0, tuple(self.files))
        if not kept:
            worst = sorted(refused.items(), key=lambda kv: -kv[1])
            named = "; ".join(f"{c.where}: {c.require!r}" for c, _ in worst) or "no constraint"
            raise StimkitError(f"set {self.spec.name!r}: the constraints keep no combination of slot words, so the set "
                               f"would be empty ({named})")

    def version(self, generator: str) -> str:
        """A content hash of every input: the lists of every slot, the template files and
        helpers, the declared constraints and phrases and the grammar (`_set.toml`), what the
        phrases import, and the generator."""
        spec, fill = self.spec, self.fill
        payload = {
            "generator": generator,
            "slot": spec.slot,
            "slots": {s.name: {"lists": fill.lists[s.name], "optional": any(f.word is None for f in fill.fillers[s.name])}
                      for s in fill.order},
            "wordlists": {n: {"category": wl.category, "words": [w.as_dict() for w in wl.words]}
                          for n, wl in self.lists.items()},
            "template_set": spec.template_set,
            "template_file": spec.template_file,
            "templates": self.tset.digest(self.files),
            "constraints": [[c.require, list(c.files)] for c in self.decl.constraints],
            "phrases": [list(p) for p in self.decl.phrases],
            "grammar": self.tset.grammar,
        }
        if self.marks[spec.slot] != 0:  # named by a slot not declared first: its spans were another slot's before
            payload["spans"] = "the named slot's"
        if self.phrase_files:  # what the phrases import from outside the set's own files
            payload["phrase_files"] = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in self.phrase_files}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _inflected(wordlists: dict[str, WordList], used: set[str], tset: TemplateSet, set_name: str) -> dict[str, WordList]:
    """The lists the set uses in the set's language, with the singular and plural of its
    grammar (as a one-slot set renders them); the others as they are."""
    out = dict(wordlists)
    for name in used & set(wordlists):
        wl = wordlists[name]
        tset.check_same_language(set_name, wl)
        out[name] = dataclasses.replace(wl, words=tuple(tset.inflected(w) for w in wl.words))
    return out


def _columns(rows: list[tuple], names: tuple[str, ...]) -> dict[str, list]:
    """Row tuples as {column: values}."""
    if not rows:
        return {c: [] for c in names}
    return {c: list(values) for c, values in zip(names, zip(*rows))}


def phrases_of(decl, tset: TemplateSet):
    """The declared phrases as templates (their id: the phrase's name, the variable lines read),
    and the files they import that the set's digest does not cover."""
    import jinja2

    from .templates import Template, plain_pieces

    out, depends = [], {}
    for name, source in decl.phrases:
        where = f"{decl.path}: phrase {name!r}"
        try:
            compiled = tset.env.from_string(source)
        except jinja2.TemplateError as e:
            raise StimkitError(f"{where}: template error: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
        tset._depends(source, where, depends)
        out.append(Template(name, "_set", 0, source, compiled, True, (), plain=plain_pieces(tset.env, source)))
    own = {p.resolve() for p in tset.helper_files()}
    return out, sorted(p for p in depends.values() if p.resolve() not in own)


def _constraints(decl, tset: TemplateSet, files: list[str]) -> dict:
    """The declared constraints compiled in the set's sandbox: {None: on every combination,
    file: on that file's lines}."""
    import jinja2

    out: dict = {None: [], **{f: [] for f in files}}
    for c in decl.constraints:
        unknown = [f for f in c.files if f not in tset.file_names]
        if unknown:
            raise StimkitError(f"{c.where}: no template file {unknown[0]!r} in set {tset.name!r} "
                               f"(has: {', '.join(tset.file_names)})")
        try:
            compiled = tset.env.compile_expression(c.require, undefined_to_none=False)
            refuse_marker_literals(tset.env.parse("{{ (" + c.require + "\n) }}"), c.where)
        except jinja2.TemplateSyntaxError as e:
            raise StimkitError(f"{c.where}: not a Jinja expression: {c.require!r} ({e.message})") from None
        for key in (c.files or [None]):
            if key is None or key in out:
                out[key].append((c, compiled))
    return out


def _what(names: list[str], combo) -> str:
    """The slot words of a (partial) combination, for errors: "slots descriptor='Deaf', noun='woman'"."""
    return "slots " + ", ".join(f"{n}={(f.word.text if f.word is not None else '')!r}" for n, f in zip(names, combo))


def _depth(constraint, names: list[str], env) -> int:
    """The position (in `names`) of the last slot a constraint reads: where it can be checked.
    An expression that cannot be analysed waits for every slot."""
    import jinja2.meta

    try:
        read = jinja2.meta.find_undeclared_variables(env.parse("{{ (" + constraint.require + "\n) }}"))
    except Exception:  # noqa: BLE001 -- compile_expression accepted it; be safe and check it last
        return len(names) - 1
    return max((names.index(r) for r in read if r in names), default=0)


def _holds(check, ctx: dict, what: str) -> bool:
    c, compiled = check
    begin()
    try:
        return bool(compiled(**ctx))
    except Exception as e:  # noqa: BLE001 -- a constraint is code: name it and the words
        raise StimkitError(f"{c.where}: {c.require!r} fails for {what}: {type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}") from None
