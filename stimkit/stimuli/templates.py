"""Template sets: folders of Jinja files, one template per line, rendered in a sandbox.

See templates/README.md for the file format. Each template line has a stable id,
`<set>/<file>:<line>`, which is stored with every stimulus it produced.

Every rendered sentence must contain the word (its marked span) unless the line or its
file declares itself word-less with the comment `{# word-less #}`.

A set's language is declared in its `_set.toml` (`language = "de"`; `"*"`: the set adds no
words of its own and serves any language), else inherited through `_base`, else English.
The English helpers (the filters a, article, plural, singular and the pronoun variables he,
him, his) serve only the languages stimuli.grammar inflects; `check_language` refuses them
for a list in another language, whose templates use the forms the list gives.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import signal
import threading
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import jinja2
import jinja2.meta
from jinja2.sandbox import SandboxedEnvironment, SecurityError

from ..choices import suggest
from .. import StimkitError
from ..errors import InputError, UsageError
from . import grammar, sandbox
from .sandbox import MAX_EXPONENT, MAX_REPEAT  # noqa: F401  (the bounds' old home)
from .inputs import check_name, inside, read_text
from . import template_sets
from .language import ANY, DEFAULT_LANGUAGE, inflected, normalise, same_language
from .template_sets import SET_FILE
from ..paths import data_dir
from .limits import Limits
from .wordlists import PRONOUNS, Word

_COMMENT = re.compile(r"\{#.*?#\}", re.S)
_PRELUDE = re.compile(r"^\s*\{%-?\s*(import|from|set)\b")
_WORDLESS = re.compile(r"\{#-?\s*word-less\s*-?#\}")
# What makes English forms: filters (stimuli.grammar) and the pronoun variables (wordlists.PRONOUNS).
ENGLISH_FILTERS = frozenset({"a", "article", "plural", "singular"})
ENGLISH_VARIABLES = frozenset({"he", "him", "his"})


class _TooSlow(BaseException):
    """Raised from SIGALRM inside Jinja's loops; a BaseException so no template code catches it."""


def _expired(signum, frame):
    raise _TooSlow()


@contextlib.contextmanager
def _deadline(seconds: float):
    """Interrupt the block after `seconds` (main thread: a timer signal, which also stops a loop
    that prints nothing); elsewhere only the output checks in `render` bound the time. Inside
    `deadlines()` the handler is installed already: only the timer is armed."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    installed = signal.getsignal(signal.SIGALRM) is _expired
    previous = None if installed else signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if not installed:
            signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def deadlines():
    """Around many renders (a set of half a million sentences): the timer signal's handler is
    installed once, each sentence still arms its own deadline."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer") \
            or signal.getsignal(signal.SIGALRM) is _expired:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _expired)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, previous)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


@dataclass(frozen=True)
class Template:
    id: str
    file: str
    line: int
    text: str
    compiled: jinja2.Template
    wordless: bool = False
    depends: tuple[Path, ...] = ()  # every file it includes or imports, directly or not
    filters: frozenset[str] = frozenset()    # the filters it (and what it includes or imports) applies
    variables: frozenset[str] = frozenset()  # the variables it reads from a word's context
    # A line that is only text and variables ("I'm {{ np }}."): its pieces, (is a variable,
    # text or name), joined without Jinja, 20x faster and the same output. None otherwise.
    plain: tuple[tuple[bool, str], ...] | None = None

    def render(self, word: Word, limits: Limits = Limits()) -> tuple[str, int | None, int | None] | None:
        """(stimulus, span_start, span_end), or None when the line renders to nothing; a
        sentence over the limits' length or time is a one-line error naming line and word."""
        out = self._generate(context_for(word), limits, f"word {word.text!r}")
        if len(out) > 4 * limits.sentence_chars + 64:
            text = out
        else:
            text, start, end = grammar.find_span(out.strip())
        if len(text) > limits.sentence_chars:
            raise StimkitError(f"{self.id}: the sentence for word {word.text!r} is over {limits.sentence_chars} characters "
                               f"({limits.how_to_raise('sentence_chars')})")
        if not text.strip():
            return None
        if start is None and not self.wordless:
            raise StimkitError(f"{self.id}: the sentence {text!r} does not contain the word {word.text!r} "
                               "(insert {{ word }}, or declare the line word-less with {# word-less #})")
        return text, start, end

    def render_slots(self, ctx: dict, names: list[str], limits: Limits, what: str, marks: list[int] | None = None):
        """A multi-slot line (stimulus.slots): (stimulus, [(start, end) of each of `names`]), or
        None when the line renders to nothing. `marks`: each name's marker pair (its declared
        position; default: the order of `names`). Every slot present in `ctx` (a non-empty
        value) must be in the sentence, whole, unless the line is word-less; a marker of a slot
        that is absent, or of no slot, is refused (a template that forged one would make its span lie)."""
        marks = list(range(len(names))) if marks is None else marks
        out = self._generate(ctx, limits, what)
        if len(out) > 4 * limits.sentence_chars + 64:
            text, spans = out, []
        else:
            present = {m for name, m in zip(names, marks) if ctx[name]}
            forged = next((c for c in set(grammar.markers_in(out)) if grammar.slot_of(c) not in present), None)
            if forged is not None:
                raise StimkitError(f"{self.id}: the sentence for {what} holds U+{ord(forged):04X}, the marker of "
                                   f"{'an absent slot' if grammar.slot_of(forged) in marks else 'no slot'}: a template "
                                   "must not make the characters stimkit marks spans with")
            text, found = grammar.find_spans(out.strip(), max(marks) + 1)
            spans = [found[m] for m in marks]
        if len(text) > limits.sentence_chars:
            raise StimkitError(f"{self.id}: the sentence for {what} is over {limits.sentence_chars} characters "
                               f"({limits.how_to_raise('sentence_chars')})")
        if not text.strip():
            return None
        if not self.wordless:
            for name, (start, _) in zip(names, spans):
                if start is None and ctx[name]:
                    raise StimkitError(f"{self.id}: the sentence {text!r} does not contain slot {name!r} "
                                       f"({ctx[name].text!r}; insert {{{{ {name} }}}}, or declare the line word-less)")
        return text, spans

    def _generate(self, ctx: dict, limits: Limits, what: str) -> str:
        """The line's output for `ctx`, markers in: bounded in length and time, any template
        error one line naming the line and what was rendered."""
        if self.plain is not None:
            try:
                return "".join(str(ctx[v]) if is_name else v for is_name, v in self.plain)
            except KeyError as e:  # as Jinja's StrictUndefined says it
                raise StimkitError(f"{self.id}: {str(e.args[0])!r} is undefined (rendering {what})") from None
        start, chunks, size = time.monotonic(), [], 0
        sandbox.begin()
        try:
            with _deadline(limits.render_seconds):
                for chunk in self.compiled.generate(ctx):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > 4 * limits.sentence_chars + 64:  # markers and spaces aside, it is over already
                        break
                    if time.monotonic() - start > limits.render_seconds:
                        raise _TooSlow()
            return "".join(chunks)
        except _TooSlow:
            raise StimkitError(f"{self.id}: rendering {what} took over {limits.render_seconds:g} s "
                               f"({limits.how_to_raise('render_seconds')})") from None
        except jinja2.UndefinedError as e:
            raise StimkitError(f"{self.id}: {_first_line(e)} (rendering {what})") from None
        except jinja2.TemplateError as e:
            raise StimkitError(f"{self.id}: template error: {_first_line(e)} (rendering {what})") from None
        except Exception as e:  # noqa: BLE001 -- a template is code: 1/0, "a" + 1, deep recursion all name the line
            raise StimkitError(f"{self.id}: {type(e).__name__}: {_first_line(e)} (rendering {what})") from None


def refuse_marker_literals(tree, where: str) -> None:
    """A string literal that spells a marker with an escape ("\\ue002") is refused as the
    character itself is (grammar.refuse_markers)."""
    from jinja2 import nodes

    for node in tree.find_all(nodes.Const):
        if isinstance(node.value, str):
            grammar.refuse_markers(node.value, f"{where} (a string literal, line {node.lineno})")


def plain_pieces(env, source: str) -> tuple[tuple[bool, str], ...] | None:
    """The pieces of a template that is only text and plain variables, or None."""
    from jinja2 import nodes

    body = env.parse(source).body
    if len(body) != 1 or not isinstance(body[0], nodes.Output):
        return None
    pieces = []
    for node in body[0].nodes:
        if isinstance(node, nodes.TemplateData):
            pieces.append((False, node.data))
        elif isinstance(node, nodes.Name) and node.ctx == "load":
            pieces.append((True, node.name))
        else:
            return None
    return tuple(pieces)


def context_for(word: Word) -> dict:
    ctx = {
        "text": word.text,  # the word unmarked, for conditions: {% if text in people %}
        "word": grammar.mark(word.text),
        "singular": grammar.mark(word.singular),
        "plural": grammar.mark(word.plural or ""),
        "kind": word.kind,
        "person": word.person,
        "gender": word.gender,
        "grammatical_gender": word.grammatical_gender,
    }
    if word.plural is None:  # a list outside English that gives no plural (check_language names the word)
        del ctx["plural"]
    if word.gender:  # pronouns exist only for gendered lists: elsewhere `he` is undefined, an error
        ctx.update(PRONOUNS[word.gender])
    return ctx


class _Loader(jinja2.FileSystemLoader):
    """Jinja's file loader, but a file reached through a symlink must stay inside a root."""

    def get_source(self, environment, template):
        source, filename, uptodate = super().get_source(environment, template)
        real = Path(filename).resolve()
        if not any(real.is_relative_to(Path(r).resolve()) for r in self.searchpath):
            raise SecurityError(f"{template!r} leads outside the template folders (to {real})")
        return source, filename, uptodate


def make_environment(roots: list[Path], grammar_name: str = grammar.PAPER_GRAMMAR) -> SandboxedEnvironment:
    env = sandbox.Sandbox(
        loader=_Loader([str(r) for r in roots]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )
    env.filters.update(grammar.filters(grammar_name))
    return env


def read_grammar(folder: Path, info: dict) -> str:
    """The grammar a set renders with: the `grammar` of its own `_set.toml` (never inherited: a
    set that reproduces a paper says so itself), else inflect."""
    name = info.get("grammar", "inflect")
    if name not in grammar.GRAMMARS:
        raise InputError(f"{folder / SET_FILE}: unknown grammar {name!r} (known: {', '.join(grammar.GRAMMARS)})")
    return name


class TemplateSet:
    """One folder of template files under a templates root.

    A folder holding a file `_base` (one line: another set's name) inherits that set's
    template files, overriding the ones it has itself; inherited templates keep their
    ids (`may2019/name:1`), so the same template is the same id in every set.

    `root` may be a list of roots, searched in order (a user's folder, then the built-in
    one); imports and `_base` sets resolve through the same list."""

    def __init__(self, name: str, root: Path | list[Path] | None = None, _chain: tuple[str, ...] = ()):
        roots = [Path(r) for r in root] if isinstance(root, (list, tuple)) else [Path(root or data_dir("templates"))]
        check_name(name, "template set")
        if name in _chain:
            raise StimkitError(f"template set {name!r}: `_base` files loop ({' -> '.join(_chain + (name,))})")
        self.roots, self.name = roots, name
        self.root = next((r for r in roots if (r / name).is_dir()), roots[0])
        self.path = self.root / name
        if not self.path.is_dir():
            known = sorted({p.name for r in roots if r.is_dir() for p in r.iterdir() if p.is_dir()})
            raise StimkitError(f"unknown template set {name!r}{suggest(name, known)} (no folder {self.path}; "
                               f"known: {', '.join(known)})")
        if not self.path.resolve().is_relative_to(self.root.resolve()):
            raise StimkitError(f"template set {name!r}: {self.path} leads outside {self.root}")
        self.info = template_sets.info(self.path)  # its `_set.toml` (description, language, grammar), checked here
        self.grammar = read_grammar(self.path, self.info)
        self.env = make_environment(roots, self.grammar)
        self._files: dict[str, list[Template]] = {}
        self.overrides: str | None = None  # the built-in set's folder, when this user set replaces it
        base_file = self.path / "_base"
        self.base = None
        if base_file.exists():
            inside(base_file, self.path, "`_base` file")
            try:
                self.base = TemplateSet(read_text(base_file).strip(), roots, _chain + (name,))
            except StimkitError as e:
                raise StimkitError(f"{base_file}: {e}") from None

    @cached_property
    def declaration(self):
        """The slots and constraints of a multi-slot set (`_set.toml`, its own or inherited;
        stimuli.slots), or None for a one-slot set."""
        from .slots import declaration

        own = declaration(self.info, self.path / SET_FILE)
        return own if own is not None or self.base is None else self.base.declaration

    def chain(self) -> list[TemplateSet]:
        """This set and the sets it inherits from."""
        return [self] + (self.base.chain() if self.base else [])

    @cached_property
    def file_names(self) -> list[str]:
        own = {p.stem for p in self.path.glob("*.j2") if not p.name.startswith("_")}
        return sorted(own | set(self.base.file_names if self.base else ()))

    def owner(self, file: str) -> "TemplateSet":
        """The set in the inheritance chain that defines `file`."""
        if (self.path / f"{file}.j2").exists() or self.base is None:
            return self
        return self.base.owner(file)

    def helper_files(self) -> list[Path]:
        """The set's `_*` files (macros, `_base`), which a version covers; not `_set.toml`, its
        description, which renders nothing."""
        own = [p for p in self.path.glob("_*") if p.name != SET_FILE]
        return sorted(own) + (self.base.helper_files() if self.base else [])

    @cached_property
    def language(self) -> str:
        """The language of the set's own words: its `_set.toml`'s, else its base's, else English
        (`*`: it has none, and serves any list)."""
        if "language" not in self.info:
            return self.base.language if self.base else DEFAULT_LANGUAGE
        return normalise(self.info["language"], str(self.path / SET_FILE), allow_any=True)

    def check_same_language(self, set_name: str, wl) -> None:
        """A list is rendered only through templates in its language, or through a set with no
        words of its own (`*`, as `word`): a sentence is in one language."""
        if not same_language(self.language, wl.provenance.language):
            raise StimkitError(f"set {set_name!r}: word list {wl.name!r} ({wl.path}:{wl.line}) is in "
                               f"{wl.provenance.language}, template set {self.name!r} ({self.path}) in {self.language}: "
                               f"use a template set in {wl.provenance.language} (its _set.toml: language = "
                               f"\"{wl.provenance.language}\"), or one with no words of its own (language = \"{ANY}\", as `word`)")

    def inflected(self, word: Word) -> Word:
        """The word with the singular and plural of this set's grammar (its list's own forms kept);
        a set in a language the grammar does not inflect leaves the list's forms as they are."""
        if not inflected(self.language):
            return word
        singular, plural = grammar.forms(word.text, word.singular, word.plural, word.forms_given, self.grammar)
        if (singular, plural) == (word.singular, word.plural):
            return word
        return dataclasses.replace(word, singular=singular, plural=plural)

    def templates(self, file: str) -> list[Template]:
        """The file's templates (an inherited file keeps its owner's ids but renders with this
        set's grammar: may2019_fixed's inherited may2019 lines use inflect's filters)."""
        if file not in self._files:
            self._files[file] = self._parse(file, self.owner(file))
        return self._files[file]

    def file_for(self, word: Word, file: str | None = None) -> str:
        if file:
            if file not in self.file_names:
                raise StimkitError(f"template set {self.name!r} has no template file {file!r} (has: {', '.join(self.file_names)})")
            return file
        if word.kind in self.file_names:
            return word.kind
        if "default" in self.file_names:
            return "default"
        raise StimkitError(
            f"template set {self.name!r} has no template for kind {word.kind!r} of word {word.text!r} "
            f"(add {self.path / (word.kind + '.j2')} or default.j2)"
        )

    def _depends(self, source: str, where: str, seen: dict[str, Path]) -> None:
        """Add to `seen` every template `source` includes, imports or extends, and theirs.
        A name computed at render time is refused: the set's version could not cover its file."""
        try:
            tree = self.env.parse(source)
        except jinja2.TemplateSyntaxError as e:
            raise StimkitError(f"{where}: template syntax error: {e.message}") from None
        refuse_marker_literals(tree, where)
        names = list(jinja2.meta.find_referenced_templates(tree))
        for name in names:
            if name is None:
                raise StimkitError(f"{where}: include/import of a name computed at render time: write the file's "
                                   "name as a constant string (a set's version must cover every file it renders)")
            if name in seen:
                continue
            try:
                source_, filename, _ = self.env.loader.get_source(self.env, name)
            except jinja2.TemplateNotFound:
                raise StimkitError(f"{where}: template imports missing file {name!r}") from None
            except SecurityError as e:
                raise StimkitError(f"{where}: {e}") from None
            seen[name] = Path(filename)
            grammar.refuse_markers(source_, filename)
            self._depends(source_, f"{filename}", seen)

    def _parse(self, file: str, owner: "TemplateSet") -> list[Template]:
        path = owner.path / f"{file}.j2"
        inside(path, owner.root, "template file")
        source = read_text(path)
        grammar.refuse_markers(source, str(path))
        declared = {n for n, line in enumerate(source.split("\n"), start=1) if _WORDLESS.search(line)}
        # Blank out comments, keeping their newlines so line numbers stay true.
        source = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), source)
        lines = source.split("\n")
        # `{# word-less #}` on a line of its own covers the file; after a template, that line.
        file_wordless = any(not lines[n - 1].strip() for n in declared)
        prelude, templates = [], []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            if not templates and _PRELUDE.match(line):
                prelude.append((number, line))
                continue
            # Pad with newlines so Jinja's own line numbers are the file's.
            padded = ["" for _ in range(number - 1)]
            for n, text in prelude:
                padded[n - 1] = text
            padded.append(line)
            try:
                compiled = self.env.from_string("\n".join(padded))
            except jinja2.TemplateSyntaxError as e:
                raise StimkitError(f"{path}:{e.lineno}: template syntax error: {e.message}") from None
            except jinja2.TemplateNotFound as e:
                raise StimkitError(f"{path}:{number}: template imports missing file {e.name!r}") from None
            except (jinja2.TemplateError, RecursionError) as e:
                raise StimkitError(f"{path}:{number}: template error: {_first_line(e)}") from None
            depends: dict[str, Path] = {}
            self._depends("\n".join(padded), f"{path}:{number}", depends)
            filters, variables = self._names("\n".join(padded), depends.values())
            templates.append(Template(f"{owner.name}/{file}:{number}", file, number, line.strip(), compiled,
                                      file_wordless or number in declared, tuple(sorted(set(depends.values()))),
                                      filters, variables, plain_pieces(self.env, "\n".join(padded))))
        if not templates:
            raise StimkitError(f"{path}: no templates (one Jinja template per line)")
        return templates

    def _names(self, source: str, depends) -> tuple[frozenset[str], frozenset[str]]:
        """The filters a template applies (itself and every file it includes or imports) and the
        variables it reads."""
        import jinja2.nodes

        trees = [self.env.parse(source)] + [self.env.parse(read_text(p)) for p in depends]
        filters = {f.name for tree in trees for f in tree.find_all(jinja2.nodes.Filter)}
        return frozenset(filters), frozenset(jinja2.meta.find_undeclared_variables(trees[0]))

    def digest(self, files: list[str]) -> str:
        """Content hash of the files used, the set's helpers, and every other file their
        templates include or import (another set's helper, a file not named `_*`)."""
        h = hashlib.sha256()
        hashed = [self.owner(f).path / f"{f}.j2" for f in sorted(set(files))] + self.helper_files()
        for p in hashed:
            if not any(p.resolve().is_relative_to(r.resolve()) for r in self.roots):
                inside(p, p.parent, "template file")  # the one-line error naming where it leads
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
        covered = {p.resolve() for p in hashed}
        extra = sorted({d for f in set(files) for t in self.templates(f) for d in t.depends if d.resolve() not in covered})
        for p in extra:  # only files the helpers do not cover: a set that includes none keeps its version
            h.update(b"include\0" + str(p.relative_to(next(r for r in self.roots if p.is_relative_to(r)))).encode()
                     + b"\0" + p.read_bytes() + b"\0")
        return h.hexdigest()


def check_language(template: Template, word: Word, language: str, wordlist: str) -> None:
    """Refuse English forms for a word of a list in a language stimuli.grammar does not
    inflect: an English filter or pronoun, or a plural the list does not give. One line naming
    the template line, the list (`wordlist`: its name and place) and what to do."""
    if inflected(language):
        return
    english = sorted(template.filters & ENGLISH_FILTERS) or sorted(template.variables & ENGLISH_VARIABLES)
    if english:
        what = "filter" if english[0] in ENGLISH_FILTERS else "pronoun variable"
        raise InputError(f"{template.id}: the {what} {english[0]!r} makes English forms, and list {wordlist} is in "
                         f"{language}: give the forms in the list (plural = \"...\") and use them ({{{{ plural }}}})")
    if "plural" in template.variables and word.plural is None:
        raise InputError(f"{template.id}: word {word.text!r} of list {wordlist} ({language}) has no plural: "
                         "give it in the list (plural = \"...\")")


def _contents(folder: Path) -> list[tuple[str, bytes]]:
    """What a set renders from: its files, its grammar and its slots, constraints and phrases
    (the rest of `_set.toml`, its description, source and language, renders nothing)."""
    info = template_sets.info(folder)
    rendered = [(f"{SET_FILE}:grammar", read_grammar(folder, info).encode())]
    rendered += [(f"{SET_FILE}:{key}", json.dumps(info[key], sort_keys=True).encode())
                 for key in ("slots", "constraints", "phrases") if key in info]
    return sorted([(str(p.relative_to(folder)), p.read_bytes()) for p in folder.rglob("*")
                   if p.is_file() and p.relative_to(folder) != Path(SET_FILE)] + rendered)


def load_set(name: str, user_root: Path | None = None, override: bool = False) -> TemplateSet:
    """A template set from the user's folder if it has it, else the built-in one. A user
    set (or one it inherits) that would replace a different built-in set of the same
    name is refused unless `override`; then the set records what it replaced."""
    builtin = data_dir("templates")
    if user_root is None:
        return TemplateSet(name, builtin)
    user_root = Path(user_root)
    if not user_root.is_dir():
        raise UsageError(f"{user_root}: no such template folder")  # a mistyped flag: exit 2
    tset = TemplateSet(name, [user_root, builtin])
    for s in tset.chain():
        replaced = builtin / s.name
        if s.root == user_root and replaced.is_dir() and _contents(s.path) != _contents(replaced):
            if not override:
                raise UsageError(f"{s.path}: template set {s.name!r} would replace the built-in set of that name "
                                   f"({replaced}); rename the folder, or pass --override (a study file: override = true)")
            s.overrides = str(replaced)
    return tset
