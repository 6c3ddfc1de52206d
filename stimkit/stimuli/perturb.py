"""Perturbation families: meaning-preserving rewordings of a template set, by rules kept as data.

Seshadri, Pezeshkpour & Singh (2022) reworded published bias templates by hand, keeping their
meaning, and saw the measured bias move from an 81% reduction to a 162% increase. A family
makes such rewordings automatically: each rule (templates/_perturb.toml, and the set's own in
its `_set.toml`) rewrites the Jinja source of the lines it matches, and one rule over one set
is one variant: a template set `<set>~<rule>` that inherits the set (`_base`) and overrides
the files it rewrote. A hand-written paraphrase of one line is a variant too.

    # _set.toml of a template set of yours
    [perturb]
    max_variants = 40                     # the family's bound (default 40; --max-variants)
    [[perturb.rules]]                     # a rule of yours: as the built-in ones
    name = "deictic-right-here"
    subs = [['is here\\.', 'is right here.']]
    [[perturb.paraphrases]]               # a hand-written rewording of one line
    template = "name:1"                   # <file>:<line> of the set (or one it inherits)
    text = "Meet {{ word }}."

The family's size is known from the text alone, before anything renders (`plan`), and a family
over its bound is refused. A rewritten line must keep the slot (a rule that removes it is an
error naming the rule and line); rendered for the words it will serve (`check`), a line that
breaks grammar (an article that does not fit the next word, a determiner or verb that does not
agree in number with the word's form, a doubled word) where its parent line did not is dropped,
with the reason; a variant left with no line is dropped. Every variant line records its rule
and parent template.

A rule's regexes are a user's, so they run on RE2 (google-re2), whose time is linear in the
line: no pattern can backtrack without end. A pattern RE2 cannot run (a backreference,
lookaround) is refused naming its file, rule and position, and so is a replacement that refers
to a group the pattern lacks or has an unknown escape. A line is refused as soon as a
substitution makes it longer than a rendered sentence may be (Limits.sentence_chars), so rules
chained on one line cannot grow it without bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import re2

from ..errors import InputError, UsageError
from ..paths import data_dir
from . import grammar
from .inputs import check_name, read_text, read_toml
from .limits import Limits
from .template_sets import SET_FILE

RULES_FILE = "_perturb.toml"
DEFAULT_MAX_VARIANTS = 40
SEPARATOR = "~"   # <set>~<rule>: a variant's name
FAMILIES = ("determiners", "tense", "contraction", "degree", "punctuation", "casing", "hedging", "politeness",
            "clause order", "synonymous frame", "user", "paraphrase")
_SLOT = re.compile(r"\{\{[^}]*?\b(word|singular|plural)\b[^}]*?\}\}")
_TAGS_AROUND = re.compile(r"^((?:\{%[^%]*%\}\s*)*)(.*?)((?:\s*\{%[^%]*%\})*)$", re.S)
_JINJA = re.compile(r"(\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\})", re.S)
_RULE_KEYS = {"name", "family", "description", "files", "subs", "frame", "case"}
_ESCAPES = {"\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


class RuleError(InputError):
    """A rule's pattern or replacement that cannot run; `pos` is its position in the text."""


def _re2_options():
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own (second) line to stderr
    return options


@lru_cache(maxsize=4096)
def compile_sub(pattern: str, replacement: str) -> tuple:
    """(RE2 regex, the replacement as pieces: text, or a group's number) of one
    [pattern, replacement] pair; a RuleError saying what and where when either cannot run."""
    try:
        regex = re2.compile(pattern, _re2_options())
    except re2.error as e:
        raise _pattern_error(pattern, e) from None
    return regex, _template(replacement, regex.groups, dict(regex.groupindex))


def _pattern_error(pattern: str, e: Exception) -> RuleError:
    why = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
    what, _, fragment = why.partition(": ")
    try:
        re.compile(pattern)
        pos = _locate(pattern, fragment)
    except re.error as py:  # a syntax error: Python's parser knows where
        pos = py.pos if py.pos is not None else -1
    hint = (" (rules run on RE2, in linear time: no backreference or lookaround)"
            if any(k in what for k in ("escape", "perl operator", "repetition")) else "")
    where = f" at position {pos}" if pos >= 0 else ""
    e = RuleError(f"bad regex {pattern!r}{where}: {what}{hint}")
    e.pos = pos
    return e


def _locate(pattern: str, fragment: str) -> int:
    """Where RE2's complaint (the text it stopped at) begins in the pattern: its first
    occurrence outside an escape, and for "(?P" not a named group "(?P<" (which RE2 runs)."""
    i = 0
    while fragment and i < len(pattern):
        if pattern.startswith(fragment, i) and not (fragment == "(?P" and pattern.startswith("(?P<", i)):
            return i
        i += 2 if pattern[i] == "\\" else 1
    return -1


def _template(repl: str, groups: int, names: dict) -> tuple:
    """The replacement as pieces (as Python's re.sub reads it: \\1..\\99, \\g<n>, \\g<name>,
    and \\n \\t \\\\ and the other control escapes); any other escape is refused, as is a
    group the pattern does not have."""
    def bad(i: int, why: str) -> RuleError:
        e = RuleError(f"bad replacement {repl!r} at position {i}: {why}")
        e.pos = i
        return e

    pieces, text, i = [], [], 0
    while i < len(repl):
        c = repl[i]
        if c != "\\":
            text.append(c)
            i += 1
            continue
        nxt = repl[i + 1:i + 2]
        if nxt in _ESCAPES:
            text.append(_ESCAPES[nxt])
            i += 2
            continue
        if nxt == "g":
            m = re.match(r"<([^<>]*)>", repl[i + 2:])
            if not m:
                raise bad(i, "\\g needs a group in <>: \\g<1> or \\g<name>")
            ref, end = m.group(1), i + 2 + m.end()
            if re.fullmatch(r"[0-9]+", ref):
                ref = int(ref)
            elif ref in names:
                ref = names[ref]  # pieces: text (str) or a group's number (int)
            else:
                raise bad(i, f"the pattern has no group named {ref!r}")
        elif nxt.isascii() and nxt.isdigit():
            m = re.match(r"[0-9]{1,2}", repl[i + 1:])
            ref, end = int(m.group(0)), i + 1 + m.end()
            if ref == 0:
                raise bad(i, "\\0 is no group (the whole match is \\g<0>)")
        else:
            raise bad(i, "a lone backslash at the end" if not nxt else
                      f"unknown escape \\{nxt} (write the character itself, \\\\ for a backslash)")
        if isinstance(ref, int) and ref > groups:
            raise bad(i, f"group {ref}, and the pattern has {groups} group{'s' if groups != 1 else ''}")
        if text:
            pieces.append("".join(text))
            text = []
        pieces.append(ref)
        i = end
    if text:
        pieces.append("".join(text))
    return tuple(pieces)


class TooLong(Exception):
    """A substitution made a line longer than its bound (raised before the line is built)."""


def substitute(regex, pieces: tuple, line: str, most: int) -> str:
    """Every match of `regex` in `line` replaced (re.sub's meaning), refused with TooLong as
    soon as the result would pass `most` characters: so nothing longer is ever built."""
    out, size, end = [], 0, 0
    for m in regex.finditer(line):
        parts = [line[end:m.start()]] + [p if isinstance(p, str) else (m.group(p) or "") for p in pieces]
        size += sum(map(len, parts))
        if size > most:
            raise TooLong
        out += parts
        end = m.end()
    size += len(line) - end
    if size > most:
        raise TooLong
    out.append(line[end:])
    return "".join(out)


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    description: str
    subs: tuple[tuple[str, str], ...] = ()
    frame: str | None = None
    case: str | None = None
    files: tuple[str, ...] = ()    # the template files (word kinds) it reads; (): every file
    source: str = "built-in"
    where: str = field(default="", compare=False)   # its file and place there, for errors

    def applies_to(self, file: str) -> bool:
        return not self.files or file in self.files

    def apply(self, line: str, limits: Limits = Limits(), what: str = "a line") -> str:
        """The line rewritten (the same line where the rule does not match). Refused: a line
        that a substitution makes longer than a rendered sentence may be (`what`: the line, for
        the error), checked after each substitution, before the longer line is built."""
        where = self.where or f"perturbation rule {self.name!r} ({self.source})"
        most = max(limits.sentence_chars, len(line))  # a line already that long is the template's own
        if self.subs:
            for k, (pattern, replacement) in enumerate(self.subs):
                try:
                    regex, pieces = compile_sub(pattern, replacement)
                    line = substitute(regex, pieces, line, most)
                except RuleError as e:
                    raise RuleError(f"{where}: subs[{k}]: {e}") from None
                except TooLong:
                    raise InputError(f"{where}: subs[{k}] makes {what} longer than {limits.sentence_chars} characters, "
                                     f"the limit of a sentence ({limits.how_to_raise('sentence_chars')})") from None
            return line
        if self.case == "lower":
            return "".join(p if _JINJA.fullmatch(p) else p.lower() for p in _JINJA.split(line)).replace("|capfirst", "")
        head, body, tail = _TAGS_AROUND.match(line).groups()
        body = re.sub(r"[.!?]\s*$", "", body)
        if body.startswith("{{"):
            body = re.sub(r"^(\{\{[^}]*?)\|capfirst", r"\1", body)
        elif body[:1].isupper() and not body[1:2].isupper():
            body = body[0].lower() + body[1:]
        out = head + self.frame.replace("{}", body) + tail
        if len(out) > most:
            raise InputError(f"{where}: its frame makes {what} longer than {limits.sentence_chars} characters, "
                             f"the limit of a sentence ({limits.how_to_raise('sentence_chars')})")
        return out


@dataclass(frozen=True)
class Change:
    """One rewritten line of a variant: its parent template and what the rule made of it."""
    file: str
    line: int
    parent_id: str       # <set>/<file>:<line> of the line rewritten
    parent_text: str
    text: str


@dataclass(frozen=True)
class Drop:
    variant: str
    template: str        # the parent template id ('' where the whole variant is dropped)
    reason: str


@dataclass(frozen=True)
class Variant:
    name: str            # <set>~<rule>
    parent: str
    rule: str
    family: str
    description: str
    source: str          # built-in | the _set.toml that declares it
    changes: tuple[Change, ...]

    @property
    def files(self) -> list[str]:
        return sorted({c.file for c in self.changes})


@dataclass
class Family:
    """A template set's variants; `dropped`: the lines (and variants) refused, each with why;
    `unmatched`: the rules that match no line of the set (no variant)."""
    parent: str
    variants: list[Variant]
    limit: int
    dropped: list[Drop] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.variants)

    def summary(self) -> str:
        lines = sum(len(v.changes) for v in self.variants)
        out = f"{self.parent}: {self.size} variant{'s' if self.size != 1 else ''} ({lines} lines rewritten)"
        if self.dropped:
            out += f", {len(self.dropped)} dropped for grammar"
        return out


def _rule(raw: dict, where: str, source: str) -> Rule:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: a rule must be a table")
    unknown = sorted(set(raw) - _RULE_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_RULE_KEYS))})")
    name = raw.get("name")
    check_name(name, "perturbation rule", where, forbid=SEPARATOR + "@ ")
    where = f"{where} (rule {name!r})"
    ways = [k for k in ("subs", "frame", "case") if k in raw]
    if len(ways) != 1:
        raise InputError(f"{where}: give exactly one of subs, frame, case")
    subs = ()
    if "subs" in raw:
        if not isinstance(raw["subs"], list) or not raw["subs"] or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in raw["subs"]):
            raise InputError(f"{where}: subs must be a list of [regex, replacement] pairs")
        for k, (pattern, replacement) in enumerate(raw["subs"]):
            try:
                compile_sub(pattern, replacement)
            except RuleError as e:
                raise RuleError(f"{where}: subs[{k}]: {e}") from None
        subs = tuple((p, r) for p, r in raw["subs"])
    if "frame" in raw and (not isinstance(raw["frame"], str) or raw["frame"].count("{}") != 1):
        raise InputError(f"{where}: frame must be a string with one {{}} (where the line goes)")
    if "case" in raw and raw["case"] != "lower":
        raise InputError(f"{where}: case must be \"lower\"")
    files = raw.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise InputError(f"{where}: files must be a list of template file names")
    family = raw.get("family", "user" if source != "built-in" else "")
    if family not in FAMILIES:
        raise InputError(f"{where}: unknown family {family!r} (known: {', '.join(FAMILIES)})")
    return Rule(name, family, str(raw.get("description", "")), subs, raw.get("frame"), raw.get("case"),
                tuple(files), source, where)


def builtin_rules() -> list[Rule]:
    path = data_dir("templates") / RULES_FILE
    raw = read_toml(path)
    return [_rule(r, f"{path}: rules[{i}]", "built-in") for i, r in enumerate(raw.get("rules", []))]


def own_declaration(tset) -> tuple[list[Rule], list[dict], int]:
    """A set's own [perturb] table (its `_set.toml`; not inherited): (rules, paraphrases, bound)."""
    where = str(tset.path / SET_FILE)
    raw = tset.info.get("perturb", {})
    if not isinstance(raw, dict):
        raise InputError(f"{where}: [perturb] must be a table")
    unknown = sorted(set(raw) - {"rules", "paraphrases", "max_variants"})
    if unknown:
        raise InputError(f"{where}: unknown key perturb.{unknown[0]} (allowed: max_variants, paraphrases, rules)")
    limit = raw.get("max_variants", DEFAULT_MAX_VARIANTS)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InputError(f"{where}: perturb.max_variants must be a whole number >= 1")
    rules = [_rule(r, f"{where}: perturb.rules[{i}]", where) for i, r in enumerate(raw.get("rules", []))]
    paraphrases = raw.get("paraphrases", [])
    for i, p in enumerate(paraphrases):
        if not isinstance(p, dict) or set(p) - {"template", "text", "name"} or not all(
                isinstance(p.get(k), str) for k in ("template", "text")):
            raise InputError(f"{where}: perturb.paraphrases[{i}] needs template = \"<file>:<line>\" and text "
                             "(and optionally name)")
    return rules, paraphrases, limit


def _lines(tset, file: str):
    """The template lines of `file` in the set, as (line number, id, text)."""
    return [(t.line, t.id, t.text) for t in tset.templates(file)]


def _slots(text: str) -> list[str]:
    return sorted(m.group(1) for m in _SLOT.finditer(text))


def plan(tset, rules: list[Rule] | None = None, limit: int | None = None, only: list[str] | None = None,
         limits: Limits = Limits()) -> Family:
    """The family of a template set from the text of its lines alone (nothing renders): one
    variant per rule that rewrites at least one line, one per paraphrase. Refused: a rewritten
    line without the slot its parent had (naming rule and line), a line a rule makes longer
    than `limits` let a sentence be, a family over its bound."""
    own_rules, paraphrases, own_limit = own_declaration(tset)
    rules = (builtin_rules() if rules is None else rules) + own_rules
    if only:
        known = {r.name for r in rules} | {p.get("name") or f"para-{i + 1}" for i, p in enumerate(paraphrases)}
        missing = [n for n in only if n not in known]
        if missing:
            raise UsageError(f"unknown perturbation rule {missing[0]!r} (known: {', '.join(sorted(known))})")
    bound = limit if limit is not None else own_limit
    files = tset.file_names
    variants, unmatched = [], []
    for rule in rules:
        if only and rule.name not in only:
            continue
        changes = []
        for file in files:
            if not rule.applies_to(file):
                continue
            for number, tid, text in _lines(tset, file):
                new = rule.apply(text, limits, tid)
                if new == text:
                    continue
                if len(new.splitlines()) != len(text.splitlines()):  # a template is one line: each keeps its number
                    raise InputError(f"{rule.where or f'perturbation rule {rule.name!r} ({rule.source})'}: it breaks "
                                     f"{tid} into several lines: {new!r}")
                if _slots(new) != _slots(text):
                    raise InputError(f"perturbation rule {rule.name!r} ({rule.source}) removes the slot from {tid}: "
                                     f"{text!r} -> {new!r}")
                changes.append(Change(file, number, tid, text, new))
        if changes:
            variants.append(Variant(f"{tset.name}{SEPARATOR}{rule.name}", tset.name, rule.name, rule.family,
                                    rule.description, rule.source, tuple(changes)))
        else:
            unmatched.append(rule.name)
    for i, p in enumerate(paraphrases):
        name = p.get("name") or f"para-{i + 1}"
        if only and name not in only:
            continue
        where = f"{tset.path / SET_FILE}: perturb.paraphrases[{i}]"
        file, _, line = p["template"].partition(":")
        if file not in files or not line.isdigit():
            raise InputError(f"{where}: template {p['template']!r} is no <file>:<line> of set {tset.name!r}")
        found = [(n, tid, text) for n, tid, text in _lines(tset, file) if n == int(line)]
        if not found:
            raise InputError(f"{where}: {file}.j2 has no template on line {line}")
        (number, tid, text), = found
        if _slots(p["text"]) != _slots(text):
            raise InputError(f"{where}: the paraphrase {p['text']!r} does not keep the slot of {tid} ({text!r})")
        check_name(name, "paraphrase", where, forbid=SEPARATOR + "@ ")
        variants.append(Variant(f"{tset.name}{SEPARATOR}{name}", tset.name, name, "paraphrase",
                                f"hand-written paraphrase of {tid}", str(tset.path / SET_FILE),
                                (Change(file, number, tid, text, p["text"]),)))
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"{tset.path / SET_FILE}: two perturbations are named {dup.split(SEPARATOR, 1)[1]!r}")
    if len(variants) > bound:
        raise UsageError(f"template set {tset.name!r}: its perturbation family has {len(variants)} variants, over the "
                         f"bound of {bound} (raise it with --max-variants, or perturb.max_variants in its {SET_FILE}; "
                         "or choose rules with --rule)")
    return Family(tset.name, variants, bound, unmatched=unmatched)


# ------------------------------------------------------------------ grammar

_SINGULAR_DETERMINERS = {"a", "an", "this", "that", "every", "each", "one", "another"}
_PLURAL_DETERMINERS = {"these", "those", "many", "several", "both", "two", "few"}
_SINGULAR_VERBS = {"is", "was", "has", "'s", "does"}
_PLURAL_VERBS = {"are", "were", "have", "'re", "do"}
_SUBJECT_VERB = [(re.compile(r"\b(this|that|it|he|she)\s+(are|were)\b", re.I), "a singular subject with a plural verb"),
                 (re.compile(r"\b(these|those|they|we)\s+(is|was)\b", re.I), "a plural subject with a singular verb")]
_ARTICLE = re.compile(r"\b([Aa]n?)\s+([A-Za-z][\w'-]*)")
_DOUBLED = re.compile(r"\b(\w+)\s+\1\b", re.I)


def grammar_errors(text: str, span: tuple[int | None, int | None], singular: str | None, plural: str | None,
                   article) -> set[str]:
    """What is ungrammatical in a rendered sentence, by the inflection layer that rendered it
    (`article`: its grammar's indefinite article of a word): an article that does not fit the
    next word, a determiner or verb that does not agree with the word's number (where its
    singular and plural forms differ), a subject that does not agree with its verb, a doubled word."""
    errors = set()
    for m in _ARTICLE.finditer(text):
        want = article(m.group(2))
        if m.group(1).lower() != want:
            errors.add(f"'{m.group(1)} {m.group(2)}' (the article is {want!r})")
    for pattern, what in _SUBJECT_VERB:
        m = pattern.search(text)
        if m:
            errors.add(f"{what}: {m.group(0)!r}")
    m = _DOUBLED.search(text)
    if m and m.group(1).lower() not in {"that", "had"}:
        errors.add(f"a doubled word: {m.group(0)!r}")
    start, end = span
    if start is not None and singular and plural and singular != plural:
        form = text[start:end]  # as rendered: capfirst may have raised its first letter
        number = "plural" if form.lower() == plural.lower() else "singular" if form.lower() == singular.lower() else None
        before = re.findall(r"([\w']+)\s*$", text[:start])
        after = re.match(r"\s*('s|'re|[\w]+)", text[end:])
        prev = before[0].lower() if before else ""
        nxt = after.group(1).lower() if after else ""
        if number == "plural" and (prev in _SINGULAR_DETERMINERS or nxt in _SINGULAR_VERBS):
            errors.add(f"{prev if prev in _SINGULAR_DETERMINERS else nxt!r} with the plural {form!r}")
        if number == "singular" and (prev in _PLURAL_DETERMINERS or nxt in _PLURAL_VERBS):
            errors.add(f"{prev if prev in _PLURAL_DETERMINERS else nxt!r} with the singular {form!r}")
    return errors


def _render_errors(template, word, tset, limits: Limits) -> tuple[str | None, set[str]]:
    out = template.render(word, limits)
    if out is None:
        return None, set()
    text, start, end = out
    article = grammar.filters(tset.grammar)["article"]
    return text, grammar_errors(text, (start, end), word.singular, word.plural, article)


def check(family: Family, tset, variant_sets: dict, words: list, limits: Limits = Limits()) -> Family:
    """The family with every rewritten line that breaks grammar for one of `words` (where its
    parent line does not) dropped, and every variant left with no line dropped; `variant_sets`:
    the candidate variants materialized (`materialize`). The words are those the variants will
    render (the test's lists, inflected by the set's grammar), within `limits`."""
    kept, dropped = [], list(family.dropped)
    by_file: dict[str, list] = {}
    for w in words:
        try:
            by_file.setdefault(tset.file_for(w), []).append(w)
        except Exception:  # noqa: BLE001 -- a word this set has no file for is refused where it renders
            continue
    for v in family.variants:
        vset = variant_sets[v.name]
        good = []
        for c in v.changes:
            parent = next(t for t in tset.templates(c.file) if t.line == c.line)
            mine = next(t for t in vset.templates(c.file) if t.line == c.line)
            reason = None
            for w in by_file.get(c.file, []):
                try:
                    text, errs = _render_errors(mine, w, tset, limits)
                except Exception as e:  # noqa: BLE001 -- a line that cannot render for a word is dropped, saying why
                    reason = f"does not render for {w.text!r}: {e}"
                    break
                if not errs:
                    continue
                _, before = _render_errors(parent, w, tset, limits)
                new = sorted(errs - before)
                if new:
                    reason = f"{new[0]} in {text!r}"
                    break
            if reason is None:
                good.append(c)
            else:
                dropped.append(Drop(v.name, c.parent_id, reason))
        if good:
            kept.append(Variant(v.name, v.parent, v.rule, v.family, v.description, v.source, tuple(good)))
        else:
            dropped.append(Drop(v.name, "", "no line left that renders grammatically"))
    return Family(family.parent, kept, family.limit, dropped, family.unmatched)


# ------------------------------------------------------------------ variants as template sets

def write_variant(v: Variant, tset, folder: Path) -> Path:
    """The variant as a template set folder: `_base` (its parent), `_set.toml` (its grammar,
    language and provenance), and each rewritten file: the parent's file with the rewritten
    lines in place, so every line keeps its number."""
    path = Path(folder) / v.name
    path.mkdir(parents=True, exist_ok=True)
    (path / "_base").write_text(v.parent + "\n", encoding="utf-8")
    info = [f'description = {_quote(f"{v.family}: {v.description}")}', f'grammar = "{tset.grammar}"',
            f'language = "{tset.language}"', f'source = {_quote(f"perturbation {v.rule} ({v.source}) of {v.parent}")}']
    (path / SET_FILE).write_text("\n".join(info) + "\n", encoding="utf-8")
    for file in v.files:
        lines = read_text(tset.owner(file).path / f"{file}.j2").split("\n")
        for c in v.changes:
            if c.file == file:
                keep = " {# word-less #}" if "word-less" in lines[c.line - 1] else ""
                lines[c.line - 1] = c.text + keep
        (path / f"{file}.j2").write_text("\n".join(lines), encoding="utf-8")
    return path


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def materialize(family: Family, tset, folder: Path) -> dict:
    """Every variant of the family as a TemplateSet, written under `folder` and read through the
    parent's own roots after it (so `_base` finds the parent, built-in or yours)."""
    from .templates import TemplateSet

    out = {}
    for v in family.variants:
        write_variant(v, tset, folder)
        out[v.name] = TemplateSet(v.name, [Path(folder), *tset.roots])
    return out


def provenance(v: Variant, vset) -> list[dict]:
    """A row per rewritten line: the variant, its version (the digest of what it renders), the
    rule, the line's id in the variant and its parent's."""
    digest = vset.digest(v.files)[:16]
    return [{"variant": v.name, "variant_digest": digest, "parent_set": v.parent, "rule": v.rule, "family": v.family,
             "rule_source": v.source, "template_id": f"{v.name}/{c.file}:{c.line}", "parent_template_id": c.parent_id,
             "parent_text": c.parent_text, "text": c.text} for c in v.changes]
