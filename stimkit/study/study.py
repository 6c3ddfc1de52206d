"""Study files: what a study is (tests, contexts, encoders, options, correction, table), read
once and checked; `Store.run` executes one through the same plan path as `stimkit test`.

    name = "may-2019"
    paper = "may-2019"                 # every catalog test this paper published (or:)
    tests = ["weat*", "sent-weat6"]    # names or shell patterns
    contexts = ["own", "c-word"]       # c-word: also each sentence test's inserted word
    encoders = ["glove-6b-50d", "minilm"]
    correction = "holm"                # holm | bonferroni | bh | by | none
    alpha = 0.01
    wefat = ["*"]                      # catalog WEFATs to run on each encoder
    wordlists = "wordlists"            # your folders, relative to the study file:
    templates = "templates"            #   word lists, template sets, test definitions
    catalog = "tests"
    checks = true                      # consistency checks over the study's results
    [options]                          # test options: budget, seed, alternative, units, ...
    units = "words"                    #   sentences | words (a word test's unit is the word whatever this says)
    [options."care-tech-gender-sent"]  # one test (a name or pattern): its units and alternative
    units = "sentences"
    [baseline]                         # a matched random baseline per result (or: baseline = 1000)
    sets = 1000                        #   K random pairs; seed, tolerance, vocabulary, language
    [display]                          # encoders' display names in tables and the report
    "glove-6b-50d" = "GloVe"
    [replicates]                       # a family of replicates: encoders = ["replicates:mb"]
    mb = ["vectors:seed0.txt", "vectors:seed1.txt"]
    [table]
    layout = "table4"                  # table4 | tan-celis (with `rows`)
    heads = "category"                 # test | category: head Table 4's rows by the tests' categories
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..choices import ALTERNATIVES, BALANCE_POLICIES, CORRECTIONS, P_METHODS, UNITS
from ..errors import StimkitError, UsageError, first_line
from ..paths import data_dir
from ..stimuli.inputs import read_toml

LAYOUTS = ("table4", "tan-celis")
HEADS = ("test", "category")  # what heads a table's rows: the test's name, or its categories
CONTEXT_CHOICES = ("own", "c-word")
KEYS = {"name", "description", "paper", "tests", "contexts", "encoders", "options", "correction", "alpha", "wefat",
        "checks", "table", "wordlists", "templates", "catalog", "baseline", "display", "override", "replicates"}
BASELINE_KEYS = {"sets", "seed", "tolerance", "vocabulary", "language"}
TABLE_KEYS = {"layout", "rows", "heads"}
PER_TEST_KEYS = {"units", "alternative"}  # what [options."<test or pattern>"] may set for its tests


@dataclass(frozen=True)
class Study:
    name: str
    description: str = ""
    paper: str | None = None                   # only this paper's catalog tests
    tests: tuple[str, ...] = ()                # names or patterns; () with a paper: all of its tests
    contexts: tuple[str, ...] = ("own",)
    encoders: tuple[str, ...] = ("glove-6b-50d",)
    options: dict = field(default_factory=dict)  # test options (run.options.Options keywords)
    per_test: tuple[tuple[str, dict], ...] = ()  # (test name or pattern, its units / alternative), in file order
    correction: str = "holm"
    alpha: float = 0.01
    wefat: tuple[str, ...] = ()
    checks: bool = False
    layout: str = "table4"
    rows: tuple[tuple[str, str, str], ...] = ()  # tan-celis: (section, paper_test, label) per paper row
    path: Path | None = None
    wordlist_dir: Path | None = None             # your own inputs (relative to the study file)
    template_dir: Path | None = None
    catalog_dir: Path | None = None
    baseline: dict | None = None                 # [baseline] sets = K, seed, tolerance, vocabulary, language
    display: dict = field(default_factory=dict)  # [display] encoder spec -> the name its tables print
    heads: str = "test"                          # [table] heads: a row's head, the test or its categories
    override: bool = False                       # its lists, templates and tests may replace built-in ones
    # [replicates] NAME = [specs]: a family of replicates, run as the encoder `replicates:NAME`
    # (run.replicates): one model trained again (MultiBERTs' seeds, a vectors file per seed)
    replicates: dict = field(default_factory=dict)


    @property
    def baseline_key(self) -> tuple[int, int] | None:
        """(K, seed) of the study's matched baselines: what its views read a result against."""
        if not self.baseline:
            return None
        return int(self.baseline["sets"]), int(self.baseline.get("seed", self.options.get("seed", 0)))

    def options_for(self, test_name: str) -> dict:
        """The option values [options."<pattern>"] give this test (later tables win)."""
        from fnmatch import fnmatchcase

        found: dict = {}
        for pattern, values in self.per_test:
            if fnmatchcase(test_name, pattern):
                found.update(values)
        return found


STUDY_FILE = "study.toml"    # a study's file, found from the working directory up (like git's .git)
STUDY_ENV = "STIMKIT_STUDY"  # names one explicitly (as does --study)


def find(start: Path | None = None) -> Path | None:
    """The study file of a project: `study.toml` in `start` (default: the working directory)
    or the nearest folder above it that has one, up to the home folder and within one file
    system; None when there is none. A file found that someone else could have planted (not
    yours, or in a folder anyone may write to) is refused (study.trust)."""
    from .trust import check_found, search

    found = search(Path(start or Path.cwd()).resolve(), STUDY_FILE)
    if found is not None:
        check_found(found)
    return found


def in_force(explicit: str | Path | None = None, start: Path | None = None, on_skip=None) -> Study | None:
    """The study that gives a command its context: `explicit` (--study: a file or a built-in
    name), else $STIMKIT_STUDY, else the study file found from `start` up; None without one.

    on_skip(message): given, a study file found in a folder above `start` that is refused or
    cannot be read is passed over with a message (a command given --db does not need it)."""
    import os

    from .trust import check_found, search

    ref = explicit or os.environ.get(STUDY_ENV)
    if ref:
        return load(ref)
    here = Path(start or Path.cwd()).resolve()
    found = search(here, STUDY_FILE)
    if found is None:
        return None
    try:
        check_found(found)
        return load(found)
    except StimkitError as e:
        if on_skip is None or found.parent == here:
            raise
        on_skip(f"{first_line(e)} (passed over: it is above this folder and --db names the store)")
        return None


def store(study: Study, name: str, named: bool) -> Path:
    """The store beside `study`'s file (`name` in its folder): a link out of the folder is
    refused, and for a study found rather than `named` so is a store someone else owns."""
    from .trust import store_beside

    return store_beside(study.path, name, trusted=named)


def builtin() -> list[str]:
    return sorted(p.stem for p in (data_dir("queries") / "studies").glob("*.toml"))


def load(ref: str | Path) -> Study:
    """A built-in study by name (`may-2019`, `tan-celis-2019`) or a study file's path."""
    path = Path(ref)
    if path.is_dir():  # a study's folder: its study file
        path = path / STUDY_FILE
    if path.suffix != ".toml":
        path = data_dir("queries") / "studies" / f"{ref}.toml"
        if not path.exists():
            raise UsageError(f"unknown study {str(ref)!r} (built in: {', '.join(builtin())}; or a study file ending .toml)")
    elif not path.is_file():
        raise UsageError(f"{path}: no such study file")
    return parse(read_toml(path), path)


def _model():
    """The study file's shape as pydantic models (built on first use: a command without a study
    file never imports pydantic). Strict: "false" is not a bool, 5 is not a list of rows."""
    from typing import Annotated, Literal, Optional, Union

    from pydantic import BaseModel, ConfigDict, Field

    strict = ConfigDict(extra="forbid", strict=True)
    Names = Union[str, list[str]]

    class OptionsModel(BaseModel):  # run.options.Options, as a study file may set it
        model_config = strict
        budget: Optional[int] = Field(None, ge=2)
        method: Optional[Literal[P_METHODS]] = None
        alternative: Optional[Literal[ALTERNATIVES]] = None
        seed: Optional[int] = Field(None, ge=0)
        ddof: Optional[int] = None
        bootstrap: Optional[int] = Field(None, ge=0)
        ci_level: Optional[float] = Field(None, gt=0, lt=1)
        balance: Optional[Literal[BALANCE_POLICIES]] = None
        cut_seed: Optional[int] = Field(None, ge=0)
        cuts: Optional[int] = Field(None, ge=1)
        metrics: Optional[list[str]] = None
        center: Optional[str] = None
        center_ref: Optional[str] = None
        units: Optional[Literal[UNITS]] = None
        clustered: Optional[bool] = None  # the old name of units = "words"
        variant: Optional[str] = None  # a likelihood test's scoring variant (built in, or queries/likelihood/ here)

    class PerTestModel(BaseModel):
        model_config = strict
        units: Optional[Literal[UNITS]] = None
        alternative: Optional[Literal[ALTERNATIVES]] = None

    class BaselineModel(BaseModel):
        model_config = strict
        sets: int = Field(ge=1)
        seed: Optional[int] = Field(None, ge=0)
        tolerance: Optional[float] = Field(None, ge=0)
        vocabulary: Optional[str] = None
        language: Optional[str] = None

    class TableModel(BaseModel):
        model_config = strict
        layout: Literal[LAYOUTS] = "table4"
        rows: list[Annotated[list[str], Field(min_length=3, max_length=3)]] = []
        heads: Literal[HEADS] = "test"

    class StudyModel(BaseModel):
        model_config = strict
        name: Optional[str] = Field(None, min_length=1)
        description: str = ""
        paper: Optional[str] = None
        tests: Names = []
        contexts: Union[Literal[CONTEXT_CHOICES], list[Literal[CONTEXT_CHOICES]]] = ["own"]
        encoders: Names = ["glove-6b-50d"]
        correction: Literal[CORRECTIONS] = "holm"
        alpha: float = Field(0.01, gt=0, lt=1)
        wefat: Names = []
        checks: bool = False
        table: TableModel = TableModel()
        wordlists: Optional[str] = Field(None, min_length=1)
        templates: Optional[str] = Field(None, min_length=1)
        catalog: Optional[str] = Field(None, min_length=1)
        baseline: Union[int, BaselineModel, None] = None
        display: dict[str, str] = {}
        override: bool = False
        replicates: dict[str, list[str]] = {}

    return StudyModel, OptionsModel, PerTestModel


# what a key that takes one of several shapes must be, said in words (pydantic names each shape)
EXPECTED = {"tests": "a name or a list of names", "encoders": "an encoder spec or a list of them",
            "wefat": "a name or a list of names", "contexts": "own, c-word or a list of them",
            "baseline": "a number of random pairs (baseline = 200) or a [baseline] table with `sets`"}


# a key people write for another (the papers' names for it)
SYNONYMS = {"k": "sets", "K": "sets", "encoder": "encoders", "test": "tests", "context": "contexts",
            "correct": "correction", "wordlist": "wordlists", "template": "templates"}


def _fields(table: str) -> list[str]:
    """The keys a table of the study file takes ('' the top level; 'options', 'baseline',
    'table'), read from its pydantic model: what a "did you mean" is checked against."""
    StudyModel, OptionsModel, _ = _model()
    fields = {"": [*StudyModel.model_fields, "options"], "options": list(OptionsModel.model_fields)}
    for name in ("baseline", "table"):
        shape = StudyModel.model_fields[name].annotation
        models = [a for a in getattr(shape, "__args__", (shape,)) if hasattr(a, "model_fields")]
        fields[name] = [f for m in models for f in m.model_fields]
    return fields.get(table, [])


def _suggest(key: str, table: str) -> str:
    """"did you mean `encoders`?" for a key close to one the table (or another table) takes,
    else the keys it takes."""
    import difflib

    def said(t: str, k: str) -> str:
        return f"[{t}] {k}" if t else f"`{k}`"

    own = _fields(table)
    if SYNONYMS.get(key) in own:
        return f"did you mean {said(table, SYNONYMS[key])}?"
    close = difflib.get_close_matches(key, own, n=1, cutoff=0.6)
    if close:
        return f"did you mean {said(table, close[0])}?"
    for other in ("", "options", "baseline", "table"):  # `budget` at the top: [options] budget
        if other != table:
            found = (key if key in _fields(other) else
                     (difflib.get_close_matches(key, _fields(other), n=1, cutoff=0.75) or [None])[0])
            if found:
                return f"did you mean {said(other, found)}?"
    return f"known: {', '.join(own)}"


def _checked(model, body: dict, where: str, prefix: str = ""):
    """`body` validated by `model`, or one line naming the file, the key and what it must be."""
    from pydantic import ValidationError

    try:
        return model.model_validate(body)
    except ValidationError as e:
        def path(error):  # the keys of the file an error reaches (a union's shape names are not keys)
            keys, value = [], body
            for k in error["loc"]:
                if isinstance(value, dict) and k in value or isinstance(value, list) and isinstance(k, int) and k < len(value):
                    keys.append(str(k))
                    value = value[k]
            return keys

        errors = e.errors()
        # the error that reaches deepest into what was written: `[baseline] k = 100` is an unknown
        # key `k` of the table, not a table where a number of pairs could be
        first = max(errors, key=lambda err: (len(path(err)), err["type"] == "extra_forbidden"))
        keys = path(first)
        tags = len(keys) < len(first["loc"])
        key = prefix + ".".join(keys)
        if first["type"] == "extra_forbidden":
            table = prefix.rstrip(".") if prefix else (keys[0] if len(keys) > 1 else "")
            if table.startswith("options."):  # [options."<test>"]
                hint = f"known: {', '.join(sorted(PER_TEST_KEYS))}"
            else:
                hint = _suggest(keys[-1], table)
            raise UsageError(f"{where}: unknown key {key!r} ({hint})") from None
        if tags and keys and keys[0] in EXPECTED and not prefix:
            got = body[keys[0]]
            raise UsageError(f"{where}: `{keys[0]}` must be {EXPECTED[keys[0]]}, not {got!r}") from None
        got = first.get("input")
        shown = f", not {got!r}" if not isinstance(got, dict) or len(repr(got)) < 60 else ""
        msg = re.sub(r" or instance of \w+", "", first["msg"])
        raise UsageError(f"{where}: `{key}`: {msg[0].lower() + msg[1:]}{shown}") from None


def _strings(value) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def parse(body: dict, path: Path | None = None) -> Study:
    """A study file's table, checked: each wrong value one line naming the file, the key and what
    it must be (a usage error, exit 2)."""
    where = str(path) if path else "study"
    if not isinstance(body, dict):
        raise UsageError(f"{where}: a study file is a TOML table")
    StudyModel, OptionsModel, PerTestModel = _model()
    unknown = sorted(set(body) - set(StudyModel.model_fields) - {"options"})
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} ({_suggest(unknown[0], '')})")
    m = _checked(StudyModel, {k: v for k, v in body.items() if k != "options"}, where)
    options = body.get("options", {})
    if not isinstance(options, dict):
        raise UsageError(f"{where}: `options` must be a table of test options ([options] budget = 10000), "
                         f"not {options!r}")
    per_test = tuple((k, v) for k, v in options.items() if isinstance(v, dict))
    for pattern, values in per_test:
        if not values:
            raise UsageError(f"{where}: [options.{pattern!r}] sets a test's {' and '.join(sorted(PER_TEST_KEYS))}")
        _checked(PerTestModel, values, where, f"options.{pattern}.")
    options = {k: v for k, v in options.items() if not isinstance(v, dict)}
    _checked(OptionsModel, options, where, "options.")
    name = m.name or (path.stem if path else None)
    if not name:
        raise UsageError(f"{where}: a study needs a `name`")
    rows = tuple(tuple(r) for r in m.table.rows)
    if m.table.layout == "tan-celis" and not rows:
        raise UsageError(f"{where}: the tan-celis layout needs `rows` of [section, paper_test, label]")
    tests = _strings(m.tests)
    if not tests and not m.paper:
        raise UsageError(f"{where}: say which tests: `tests` (names or patterns) or `paper`")
    folders = {}
    for key in ("wordlists", "templates", "catalog"):
        value = getattr(m, key)
        if value is None:
            folders[key] = None
            continue
        folder = (path.parent if path else Path.cwd()) / value
        if not folder.is_dir():
            raise UsageError(f"{where}: `{key}` folder {folder} does not exist")
        folders[key] = folder
    baseline = m.baseline
    if isinstance(baseline, int):  # baseline = 1000: K pairs, the defaults
        if baseline < 1:
            raise UsageError(f"{where}: `baseline`: a number of random pairs (1 or more), not {baseline}")
        baseline = {"sets": baseline}
    elif baseline is not None:
        baseline = baseline.model_dump(exclude_none=True)
        if isinstance(baseline.get("vocabulary"), str):  # relative to the study file, like its folders
            baseline["vocabulary"] = str((path.parent if path else Path.cwd()) / baseline["vocabulary"])
    return Study(name, m.description, m.paper, tests, _strings(m.contexts), _strings(m.encoders), dict(options),
                 per_test, m.correction, float(m.alpha), _strings(m.wefat), m.checks, m.table.layout, rows, path,
                 folders["wordlists"], folders["templates"], folders["catalog"], baseline, dict(m.display),
                 m.table.heads, m.override, replicates={k: list(v) for k, v in m.replicates.items()})
