"""The test catalog: tests as four stimulus sets (X, Y, A, B), each resolving to SQL.

Definitions come from queries/catalog.toml (the published tests) and from the store's
`imported_tests` table (`stimkit import sentbias`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import polars as pl

from .. import DEFAULT_PAPER, store
from ..errors import UsageError
from ..paths import data_dir
from ..choices import ALTERNATIVES, CONTEXTS, SOURCES, UNITS, check_choice, suggest
from ..stimuli.inputs import check_name, read_toml
from ..stimuli.sets import SetSpec, fetch, is_sql, set_sql, specs_of
from .corpus import PREFIX as CORPUS_PREFIX
from ..store import usersql

ROLES = ("x", "y", "a", "b")
SENTBIAS_KEYS = dict(zip(ROLES, ("targ1", "targ2", "attr1", "attr2")))
from ..stimuli.balance import BALANCE_POLICIES  # noqa: E402  (a test names its policy)


@dataclass(frozen=True)
class TestDef:
    name: str
    sets: tuple[str, str, str, str]
    context: str = "sentence"
    paper_test: str | None = None  # its test in the paper: Caliskan's row (C1..C10, C3b), +C11, ABW, ...
    balance: str = "cut"
    categories: tuple[str | None, ...] = (None, None, None, None)
    source: str = "catalog"
    paper: str | None = None      # the paper that published the test (catalog: may-2019 unless given)
    unbleached: bool = False      # sentences with semantic content ("[Name] is an engineer.")
    alternative: str | None = None  # the test's own alternative (None: greater, unless a run says otherwise)
    metrics: tuple[str, ...] | None = None  # the test's own metrics (None: weat, unless a run says otherwise)
    cross_lingual: bool = False   # targets in one language, attributes in another (XWEAT), on purpose
    units: str | None = None      # sentences | words: a sentence test's unit of inference (None: words)
    pair: str | None = None       # a word test and a sentence test with the same key are checked against each other
    cword_slot: str | None = None           # c-word on a named slot of multi-slot sets (context "c-word:<slot>")

    def word_lists(self) -> list[str | None]:
        """The word list behind each of X, Y, A, B (None for a set given as SQL or by a bare name):
        a word test and a sentence test on the same four lists ask the same question."""
        return [SetSpec.parse(s).wordlist if not is_sql(s) and "@" in s else None for s in self.sets]

    def sql(self, role: str) -> str:
        return set_sql(self.sets[ROLES.index(role)])

    def set_specs(self) -> list[SetSpec]:
        return specs_of(self.sets)


TEST_KEYS = {"sets", "context", "paper_test", "balance", "categories", "paper", "unbleached", "alternative", "metrics",
             "description", "cross_lingual", "units", "pair"}
OLD_KEYS = {"family": "paper_test"}  # a catalog file written before the rename still reads


def new_keys(body: dict, where: str) -> dict:
    """A test's table with its old key names read as the new ones (`family` is `paper_test`)."""
    for old, new in OLD_KEYS.items():
        if old in body:
            if new in body:
                raise UsageError(f"{where}: `{old}` is the old name of `{new}`: give `{new}` only")
            body = {(new if k == old else k): v for k, v in body.items()}
    return body


def parse_tests(raw: dict, path, source: str = "catalog", paper: str | None = DEFAULT_PAPER) -> dict[str, TestDef]:
    """Test definitions from a TOML file's tables, each checked (one line naming the file and test)."""
    tests = {}
    for name, body in raw.items():
        where = f"{path}: test {name!r}"
        check_name(name, "test", str(path))
        if not isinstance(body, dict):
            raise UsageError(f"{where}: must be a table with `sets`")
        body = new_keys(body, where)
        unknown = set(body) - TEST_KEYS
        if unknown:
            raise UsageError(f"{where}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(TEST_KEYS))})")
        sets = body.get("sets")
        if not (isinstance(sets, list) and len(sets) == 4 and all(isinstance(s, str) and s.strip() for s in sets)):
            n = len(sets) if isinstance(sets, list) else 0
            raise UsageError(f"{where}: `sets` must list four sets (X, Y, A, B), not {n}")
        balance = body.get("balance", "cut")
        if balance not in BALANCE_POLICIES:
            raise UsageError(f"{where}: unknown balance {balance!r} (known: {', '.join(BALANCE_POLICIES)})")
        if body.get("context") not in (None, "word", "sentence", "c-word"):
            raise UsageError(f"{where}: unknown context {body.get('context')!r} (known: word, sentence, c-word)")
        if body.get("context") == "c-word" and infer_context(sets) == "word":
            raise UsageError(f"{where}: context c-word reads a word in its sentences, and `list@word` sets have none")
        context = body.get("context") or infer_context(sets)
        alternative = body.get("alternative")
        if alternative is not None and alternative not in ALTERNATIVES:
            raise UsageError(f"{where}: unknown alternative {alternative!r} (known: {', '.join(ALTERNATIVES)})")
        metrics = body.get("metrics")
        if metrics is not None and not (isinstance(metrics, list) and metrics and all(isinstance(m, str) for m in metrics)):
            raise UsageError(f"{where}: `metrics` must list metric names (e.g. [\"weat\", \"ripa\"])")
        if not isinstance(body.get("cross_lingual", False), bool):
            raise UsageError(f"{where}: `cross_lingual` must be true or false")
        units = body.get("units")
        if units is not None:
            check_choice(units, UNITS, where, "units")
        if units == "sentences" and context == "word":
            raise UsageError(f"{where}: a word test has one stimulus a word: its units are words")
        pair = body.get("pair")
        if pair is not None and not (isinstance(pair, str) and pair.strip()):
            raise UsageError(f"{where}: `pair` must be a name (the same in the word test and its sentence test)")
        tests[name] = TestDef(
            name, tuple(sets), context, body.get("paper_test"), balance,
            tuple((list(body.get("categories", [])) + [None] * 4)[:4]), source=source,
            paper=body.get("paper", paper), unbleached=bool(body.get("unbleached", False)), alternative=alternative,
            metrics=tuple(metrics) if metrics else None, cross_lingual=body.get("cross_lingual", False), units=units,
            pair=pair,
        )
    return tests


def infer_context(refs) -> str:
    """A test whose four sets are all word-level set names (`list@word`) is a word test; one
    whose sets are named (none SQL, none `@word`) and read contexts from a corpus
    (`list@corpus:<name>`, catalog.corpus) runs as c-word, each context read through the
    word's own vector as CEAT reads it (a sentence holding two target words would otherwise
    give both one vector); `sentence` asks for the pooled sentence."""
    if all(not is_sql(r) and r.endswith("@word") for r in refs):
        return "word"
    named = [SetSpec.parse(r) for r in refs if not is_sql(r) and "@" in r]
    if len(named) == len(refs) and any(s.template_set.startswith(CORPUS_PREFIX) for s in named) \
            and not any(s.template_set == "word" for s in named):
        return "c-word"
    return "sentence"


def likelihood_toml() -> dict[str, TestDef]:
    """The built-in tests a language model alone runs (queries/catalog-likelihood.toml: the
    likelihood form of WEAT); no paper's."""
    path = data_dir("queries") / "catalog-likelihood.toml"
    return dict(_parsed_toml(path, path.stat().st_mtime_ns if path.exists() else None, None))


def likelihood_only(test: TestDef) -> bool:
    """Whether a test is one of the built-in tests a language model alone runs."""
    return test.source == "catalog" and test.name in likelihood_toml()


def load_toml(path=None) -> dict[str, TestDef]:
    path = Path(path or data_dir("queries") / "catalog.toml")
    # parsed once per version of the file (an import of WEATHub's 60 folders asked 120 times)
    return dict(_parsed_toml(path, path.stat().st_mtime_ns if path.exists() else None))


@functools.lru_cache(maxsize=8)
def _parsed_toml(path: Path, mtime_ns: int | None, paper: str | None = DEFAULT_PAPER) -> dict[str, TestDef]:
    return parse_tests(read_toml(path), path, paper=paper)


def load_dir(directory) -> dict[str, TestDef]:
    """Your own test definitions: every *.toml file in a folder (--catalog-dir,
    STIMKIT_CATALOG_DIR), in the catalog's format; a name defined twice is refused."""
    folder = Path(directory)
    if not folder.is_dir():
        raise UsageError(f"{folder}: no such catalog folder")
    tests: dict[str, TestDef] = {}
    for path in sorted(folder.glob("*.toml")):
        found = parse_tests(read_toml(path), path, source=f"user:{path}", paper=None)
        twice = set(found) & set(tests)
        if twice:
            name = sorted(twice)[0]
            raise UsageError(f"{path}: test {name!r} is defined again (first in {tests[name].source[5:]})")
        tests.update(found)
    if not tests:
        raise UsageError(f"{folder}: no test definitions (*.toml files with [test] tables)")
    return tests


def catalog_dir(given=None) -> Path | None:
    value = given or os.environ.get("STIMKIT_CATALOG_DIR")
    return Path(value) if value else None


def to_toml(test: TestDef) -> str:
    """A test's definition as a TOML table that `load_dir` reads back."""
    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"[{q(test.name)}]", "sets = [" + ", ".join(q(s) for s in test.sets) + "]", f"context = {q(test.context)}",
             f"balance = {q(test.balance)}"]
    if test.paper_test:
        lines.append(f"paper_test = {q(test.paper_test)}")
    if test.alternative:
        lines.append(f"alternative = {q(test.alternative)}")
    if test.metrics:
        lines.append("metrics = [" + ", ".join(q(m) for m in test.metrics) + "]")
    if test.units:
        lines.append(f"units = {q(test.units)}")
    if test.pair:
        lines.append(f"pair = {q(test.pair)}")
    if any(test.categories):
        lines.append("categories = [" + ", ".join(q(c or "") for c in test.categories) + "]")
    if test.cross_lingual:
        lines.append("cross_lingual = true")
    return "\n".join(lines) + "\n"


def papers(tests: dict[str, TestDef] | None = None) -> list[str]:
    return sorted({t.paper for t in (tests or load_toml()).values() if t.paper})


def by_paper(tests: dict[str, TestDef], paper: str | None) -> dict[str, TestDef]:
    """The tests one paper published (None: all)."""
    if paper is None:
        return tests
    known = papers(tests)
    if paper not in known:
        raise UsageError(f"unknown paper {paper!r} (known: {', '.join(known)})")
    return {n: t for n, t in tests.items() if t.paper == paper}


def listing(tests: dict[str, TestDef]) -> pl.DataFrame:
    """One row per test: what `stimkit catalog` prints."""
    return pl.DataFrame([{"test": t.name, "paper": t.paper, "context": t.context, "paper_test": t.paper_test,
                          "unbleached": t.unbleached, "source": t.source,
                          "X": t.sets[0], "Y": t.sets[1], "A": t.sets[2], "B": t.sets[3]} for t in tests.values()],
                        schema_overrides={"paper": pl.String, "paper_test": pl.String})


def load(con=None, directory=None, override: bool = False) -> dict[str, TestDef]:
    """Every test: the catalog, your own (`directory`, else STIMKIT_CATALOG_DIR), and the
    store's imported and ad-hoc ones. Your test named like a built-in one with another
    definition is refused unless `override` (its source then says what it replaced)."""
    tests = {**load_toml(), **likelihood_toml()}
    folder = catalog_dir(directory)
    if folder is not None:
        for name, t in load_dir(folder).items():
            if name in tests and tests[name].sets != t.sets:
                if not override:
                    raise UsageError(f"{t.source[5:]}: test {name!r} has the name of a built-in test with other sets; "
                                     "rename it, or pass --override (a study file: override = true)")
                t = replace(t, source=f"{t.source} (overrides catalog)")
            tests[name] = t
    if con is not None:
        for name, source, x, y, a, b, context, balance, alternative, cross_lingual, units in con.execute(
            "SELECT name, source, x_set, y_set, a_set, b_set, context, balance, alternative, cross_lingual, units "
            "FROM imported_tests ORDER BY name"
        ).fetchall():
            tests.setdefault(name, TestDef(name, (x, y, a, b), context or "sentence", None, balance or "none",
                                           source=source, alternative=alternative, cross_lingual=bool(cross_lingual),
                                           units=units))
    return tests


def get(con, name: str, directory=None) -> TestDef:
    tests = load(con, directory)
    if name not in tests:
        raise UsageError(f"unknown test {name!r}" + (suggest(name, tests) or " (see `stimkit catalog`)"))
    return tests[name]


def fetch_sets(con, test: TestDef) -> dict[str, pl.DataFrame]:
    return {role: fetch(con, test.sql(role), f"test {test.name!r} set {role.upper()}", test.sets[i])
            for i, role in enumerate(ROLES)}


def default_specs(lists: dict) -> list[SetSpec]:
    """Every catalog set, then every word list under `word` and `may2019`."""
    specs = [s for t in load_toml().values() for s in t.set_specs()]
    for name in lists:
        specs += [SetSpec(name, "word"), SetSpec(name, "may2019")]
    return list(dict.fromkeys(specs))


def select(con, patterns: list[str] | None, everything: bool = False, source: str | None = None,
           directory=None) -> list[TestDef]:
    """Tests by shell-style patterns over catalog and imported names ('sent-weat*',
    '*angry*'), or every test; `source` narrows to the catalog or to imported tests.
    A pattern that matches nothing is an error: a typo must not run a smaller study."""
    from fnmatch import fnmatchcase

    if source is not None and source not in SOURCES:
        raise UsageError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
    known = [t for t in load(con, directory).values()
             if source is None or (t.source == "catalog") == (source == "catalog")]
    if everything:  # the tests a language model alone runs are named, never swept in (likelihood_only)
        return [t for t in known if not likelihood_only(t)]
    chosen: dict[str, TestDef] = {}
    for pattern in patterns or []:
        found = [t for t in known if fnmatchcase(t.name, pattern)]
        if not found:
            elsewhere = defined_elsewhere(con, pattern)
            if elsewhere:
                raise UsageError(f"no test matches {pattern!r} in the folders in force, but the store holds results of "
                                 f"{elsewhere}: name its folder (--catalog-dir, or the study's `catalog`), or run from "
                                 "the study's folder")
            close = suggest(pattern, [t.name for t in known]) or " (see `stimkit catalog`)"
            raise UsageError(f"no test matches {pattern!r}" + (f" among {source} tests" if source else "") + close)
        chosen.update((t.name, t) for t in found)
    return list(chosen.values())


def defined_elsewhere(con, pattern: str) -> str | None:
    """Where the store's results say a test of this name (or pattern) came from, when no folder
    in force defines it: 'religion-peace from user:religion/tests/religion.toml'; else None."""
    if con is None:
        return None
    try:
        found = store.rows(con, "SELECT DISTINCT test, test_source FROM results WHERE test LIKE ? ESCAPE '\\' "
                                "AND starts_with(test_source, 'user:') ORDER BY 1, 2 LIMIT 3", [_like(pattern)])
    except duckdb.Error:  # a store from before test_source: nothing to say
        return None
    return "; ".join(f"{test} from {source}" for test, source in found) or None


def _like(pattern: str) -> str:
    """A shell pattern as a LIKE pattern (escape character backslash)."""
    out = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return out.replace("*", "%").replace("?", "_")


def select_stimuli(con, sets: list[str] | None = None, tests: list[str] | None = None, everything: bool = False) -> pl.DataFrame:
    """The stimuli (text and span) of sets by name or SQL, of tests, or of every current set."""
    from ..encoders.embeddings import stimuli_of

    if everything:
        return stimuli_of([fetch(con, "SELECT * FROM current_stimuli", "all stimuli")])
    frames = [fetch(con, set_sql(name), f"set {name!r}") for name in sets or []]
    for name in tests or []:
        frames += list(fetch_sets(con, get(con, name)).values())
    if not frames:
        raise UsageError("say what to encode: a set (--set), a test (--test) or everything (--all)")
    return stimuli_of(frames)


def sizes(con, test: TestDef) -> pl.DataFrame:
    """A test's four set queries and how many stimuli each selects (or why it cannot say:
    no store yet, or the query's error), a row per role."""
    rows = []
    for role in ROLES:
        sql, n, error = test.sql(role), None, None
        if con is None:
            error = "no store yet"
        else:
            try:
                n = store.one(con, f"SELECT count(*) FROM ({sql})")[0]
            except duckdb.Error as e:
                error = usersql.first_line(e)
        rows.append({"role": role.upper(), "n_stimuli": n, "sql": sql, "error": error})
    return pl.DataFrame(rows, schema={"role": pl.String, "n_stimuli": pl.Int64, "sql": pl.String, "error": pl.String})


def adhoc(name: str, refs: tuple[str, str, str, str], context: str | None, balance: str,
          alternative: str | None = None, cross_lingual: bool = False, units: str | None = None) -> TestDef:
    """A test given on the command line (--x --y --a --b): checked as a catalog test is."""
    check_name(name, "test", "--name")
    if context not in (None, "word", "sentence", "c-word"):
        raise UsageError(f"unknown context {context!r} for an ad-hoc test (known: word, sentence, c-word)")
    context = context or infer_context(refs)
    return TestDef(name, tuple(refs), context, None, balance, source="adhoc", alternative=alternative,
                   cross_lingual=cross_lingual, units=None if context == "word" else units)


def store_adhoc(con, test: TestDef) -> None:
    """Remember an ad-hoc test by name, so `stimkit test NAME` runs it again."""
    with store.transaction(con):
        con.execute("DELETE FROM imported_tests WHERE name = ?", [test.name])
        con.execute("INSERT INTO imported_tests (name, source, x_set, y_set, a_set, b_set, context, balance, alternative, "
                    "cross_lingual, units) VALUES (?, 'adhoc', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [test.name, *test.sets, test.context, test.balance, test.alternative, test.cross_lingual, test.units])


def table(con, paper: str | None = None, directory=None) -> pl.DataFrame:
    """What `stimkit catalog` lists: the tests of one paper, or every test and the WEFAT
    entries (one target set, and a property in place of Y)."""
    from .wefat import load_catalog

    df = listing(by_paper(load(con, directory), paper))
    if paper is not None:
        return df
    entries = [{"test": t.name, "paper": "caliskan-2017", "context": t.context, "paper_test": "WEFAT", "source": "catalog",
                "X": t.targets, "Y": f"property {t.property}", "A": t.a, "B": t.b} for t in load_catalog().values()]
    return pl.concat([df, pl.DataFrame(entries)], how="diagonal_relaxed")


__all__ = ["BALANCE_POLICIES", "CONTEXTS", "ROLES", "SENTBIAS_KEYS", "TestDef", "by_paper", "default_specs", "fetch",
           "fetch_sets", "get", "is_sql", "load", "load_toml", "papers", "select", "select_stimuli", "set_sql",
           "sizes", "table"]
