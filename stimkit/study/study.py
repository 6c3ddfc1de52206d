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
    [table]
    layout = "table4"                  # table4 | tan-celis (with `rows`)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..checks import ALTERNATIVES, UNITS, check_choice
from ..errors import UsageError
from ..paths import data_dir
from ..stimuli.inputs import read_toml

LAYOUTS = ("table4", "tan-celis")
CONTEXT_CHOICES = ("own", "c-word")
KEYS = {"name", "description", "paper", "tests", "contexts", "encoders", "options", "correction", "alpha", "wefat",
        "checks", "table", "wordlists", "templates", "catalog", "baseline"}
BASELINE_KEYS = {"sets", "seed", "tolerance", "vocabulary", "language"}
TABLE_KEYS = {"layout", "rows"}
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
    rows: tuple[tuple[str, str, str], ...] = ()  # tan-celis: (section, family, label) per paper row
    path: Path | None = None
    wordlist_dir: Path | None = None             # your own inputs (relative to the study file)
    template_dir: Path | None = None
    catalog_dir: Path | None = None
    baseline: dict | None = None                 # [baseline] sets = K, seed, tolerance, vocabulary, language


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
    or the nearest folder above it that has one; None when there is none."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / STUDY_FILE
        if candidate.is_file():
            return candidate
    return None


def in_force(explicit: str | Path | None = None, start: Path | None = None) -> Study | None:
    """The study that gives a command its context: `explicit` (--study: a file or a built-in
    name), else $STIMKIT_STUDY, else the study file found from `start` up; None without one."""
    import os

    ref = explicit or os.environ.get(STUDY_ENV) or find(start)
    return load(ref) if ref else None


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


def _strings(body: dict, key: str, where: str, default=()) -> tuple[str, ...]:
    value = body.get(key, default)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise UsageError(f"{where}: `{key}` must be a list of names")
    return tuple(value)


def parse(body: dict, path: Path | None = None) -> Study:
    where = str(path) if path else "study"
    unknown = set(body) - KEYS
    if unknown:
        raise UsageError(f"{where}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(KEYS))})")
    name = body.get("name") or (path.stem if path else None)
    if not isinstance(name, str) or not name:
        raise UsageError(f"{where}: a study needs a `name`")
    table = body.get("table", {})
    if not isinstance(table, dict) or set(table) - TABLE_KEYS:
        raise UsageError(f"{where}: [table] takes {', '.join(sorted(TABLE_KEYS))}")
    layout = table.get("layout", "table4")
    if layout not in LAYOUTS:
        raise UsageError(f"{where}: unknown table layout {layout!r} (known: {', '.join(LAYOUTS)})")
    rows = tuple(tuple(r) for r in table.get("rows", ()))
    if layout == "tan-celis" and not rows or any(len(r) != 3 for r in rows):
        raise UsageError(f"{where}: the tan-celis layout needs `rows` of [section, family, label]")
    contexts = _strings(body, "contexts", where, ("own",))
    if set(contexts) - set(CONTEXT_CHOICES):
        raise UsageError(f"{where}: contexts are {' and '.join(CONTEXT_CHOICES)}, not {sorted(set(contexts) - set(CONTEXT_CHOICES))[0]!r}")
    options = body.get("options", {})
    if not isinstance(options, dict):
        raise UsageError(f"{where}: [options] must be a table of test options")
    per_test = tuple((k, v) for k, v in options.items() if isinstance(v, dict))
    for pattern, values in per_test:
        if set(values) - PER_TEST_KEYS or not values:
            bad = sorted(set(values) - PER_TEST_KEYS)
            raise UsageError(f"{where}: [options.{pattern!r}] sets a test's {' and '.join(sorted(PER_TEST_KEYS))}"
                             + (f", not {bad[0]!r}" if bad else ""))
        for key, known in (("units", UNITS), ("alternative", ALTERNATIVES)):
            if key in values:
                check_choice(values[key], known, f"{where}: [options.{pattern!r}]", key)
    options = {k: v for k, v in options.items() if not isinstance(v, dict)}
    alpha = body.get("alpha", 0.01)
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool):
        raise UsageError(f"{where}: `alpha` must be a number")
    tests, paper = _strings(body, "tests", where), body.get("paper")
    if not tests and not paper:
        raise UsageError(f"{where}: say which tests: `tests` (names or patterns) or `paper`")
    folders = {}
    for key in ("wordlists", "templates", "catalog"):
        value = body.get(key)
        if value is None:
            folders[key] = None
            continue
        if not isinstance(value, str) or not value:
            raise UsageError(f"{where}: `{key}` must be a folder (relative to the study file)")
        folder = (path.parent if path else Path.cwd()) / value
        if not folder.is_dir():
            raise UsageError(f"{where}: `{key}` folder {folder} does not exist")
        folders[key] = folder
    baseline = body.get("baseline")
    if isinstance(baseline, int) and not isinstance(baseline, bool):  # baseline = 1000: K pairs, the defaults
        baseline = {"sets": baseline}
    if baseline is not None:
        if not isinstance(baseline, dict) or set(baseline) - BASELINE_KEYS or "sets" not in baseline:
            raise UsageError(f"{where}: `baseline` is a number of random pairs (baseline = 1000) or a table "
                             f"[baseline] with `sets` (and {', '.join(sorted(BASELINE_KEYS - {'sets'}))})")
        if isinstance(baseline.get("vocabulary"), str):  # relative to the study file, like its folders
            baseline = {**baseline, "vocabulary": str((path.parent if path else Path.cwd()) / baseline["vocabulary"])}
    return Study(name, str(body.get("description", "")), paper, tests, contexts,
                 _strings(body, "encoders", where, ("glove-6b-50d",)), dict(options), per_test,
                 str(body.get("correction", "holm")),
                 float(alpha), _strings(body, "wefat", where), bool(body.get("checks", False)), layout, rows, path,
                 folders["wordlists"], folders["templates"], folders["catalog"], baseline)
