"""Template sets: folders of Jinja files, one template per line, rendered in a sandbox.

See templates/README.md for the file format. Each template line has a stable id,
`<set>/<file>:<line>`, which is stored with every stimulus it produced.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from . import StimkitError, grammar
from .paths import data_dir
from .wordlists import PRONOUNS, Word

_COMMENT = re.compile(r"\{#.*?#\}", re.S)
_PRELUDE = re.compile(r"^\s*\{%-?\s*(import|from|set)\b")


@dataclass(frozen=True)
class Template:
    id: str
    file: str
    line: int
    text: str
    compiled: jinja2.Template

    def render(self, word: Word) -> tuple[str, int | None, int | None] | None:
        """(stimulus, span_start, span_end), or None when the line renders to nothing."""
        try:
            out = self.compiled.render(context_for(word))
        except jinja2.UndefinedError as e:
            raise StimkitError(f"{self.id}: {e.message} (rendering word {word.text!r})") from None
        except jinja2.TemplateError as e:
            raise StimkitError(f"{self.id}: template error: {e} (rendering word {word.text!r})") from None
        text, start, end = grammar.find_span(out.strip())
        if not text:
            return None
        return text, start, end


def context_for(word: Word) -> dict:
    ctx = {
        "text": word.text,  # the word unmarked, for conditions: {% if text in people %}
        "word": grammar.mark(word.text),
        "singular": grammar.mark(word.singular),
        "plural": grammar.mark(word.plural),
        "kind": word.kind,
        "person": word.person,
        "gender": word.gender,
    }
    if word.gender:  # pronouns exist only for gendered lists: elsewhere `he` is undefined, an error
        ctx.update(PRONOUNS[word.gender])
    return ctx


def make_environment(root: Path) -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )
    env.filters.update(
        a=grammar.with_article,
        article=grammar.article,
        plural=grammar.plural,
        singular=grammar.singular,
        capfirst=grammar.capfirst,
    )
    return env


class TemplateSet:
    """One folder of template files under the templates root.

    A folder holding a file `_base` (one line: another set's name) inherits that set's
    template files, overriding the ones it has itself; inherited templates keep their
    ids (`may2019/name:1`), so the same template is the same id in every set."""

    def __init__(self, name: str, root: Path | None = None):
        self.root = Path(root or data_dir("templates"))
        self.name = name
        self.path = self.root / name
        if not self.path.is_dir():
            known = ", ".join(sorted(p.name for p in self.root.iterdir() if p.is_dir())) if self.root.is_dir() else ""
            raise StimkitError(f"unknown template set {name!r} (no folder {self.path}; known: {known})")
        self.env = make_environment(self.root)
        self._files: dict[str, list[Template]] = {}
        base_file = self.path / "_base"
        self.base = TemplateSet(base_file.read_text().strip(), self.root) if base_file.exists() else None

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
        return sorted(self.path.glob("_*")) + (self.base.helper_files() if self.base else [])

    def templates(self, file: str) -> list[Template]:
        owner = self.owner(file)
        if owner is not self:
            return owner.templates(file)
        if file not in self._files:
            self._files[file] = self._parse(file)
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

    def _parse(self, file: str) -> list[Template]:
        path = self.path / f"{file}.j2"
        source = path.read_text(encoding="utf-8")
        # Blank out comments, keeping their newlines so line numbers stay true.
        source = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), source)
        lines = source.split("\n")
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
            templates.append(Template(f"{self.name}/{file}:{number}", file, number, line.strip(), compiled))
        if not templates:
            raise StimkitError(f"{path}: no templates (one Jinja template per line)")
        return templates

    def digest(self, files: list[str]) -> str:
        """Content hash of the files used plus the set's helpers."""
        h = hashlib.sha256()
        for p in [self.owner(f).path / f"{f}.j2" for f in sorted(set(files))] + self.helper_files():
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
        return h.hexdigest()
