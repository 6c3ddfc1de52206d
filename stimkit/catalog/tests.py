"""The test catalog: tests as four stimulus sets (X, Y, A, B), each resolving to SQL.

Definitions come from queries/catalog.toml (the published tests) and from the store's
`imported_tests` table (`stimkit import sentbias`).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import polars as pl

from .. import DEFAULT_PAPER, store
from ..errors import UsageError
from ..paths import data_dir
from ..stimuli.inputs import read_toml
from ..stimuli.sets import SetSpec, fetch, is_sql, set_sql, specs_of
from ..store import usersql

ROLES = ("x", "y", "a", "b")
SENTBIAS_KEYS = dict(zip(ROLES, ("targ1", "targ2", "attr1", "attr2")))
from ..stimuli.balance import BALANCE_POLICIES  # noqa: E402  (a test names its policy)
CONTEXTS = ("word", "sentence", "c-word")
SOURCES = ("catalog", "imported")


@dataclass(frozen=True)
class TestDef:
    name: str
    sets: tuple[str, str, str, str]
    context: str = "sentence"
    family: str | None = None
    balance: str = "cut"
    categories: tuple[str | None, ...] = (None, None, None, None)
    source: str = "catalog"
    paper: str | None = None      # the paper that published the test (catalog: may-2019 unless given)
    unbleached: bool = False      # sentences with semantic content ("[Name] is an engineer.")

    def sql(self, role: str) -> str:
        return set_sql(self.sets[ROLES.index(role)])

    def set_specs(self) -> list[SetSpec]:
        return specs_of(self.sets)


def load_toml(path=None) -> dict[str, TestDef]:
    path = path or data_dir("queries") / "catalog.toml"
    raw = read_toml(path)
    tests = {}
    for name, body in raw.items():
        sets = body.get("sets")
        if not (isinstance(sets, list) and len(sets) == 4):
            raise UsageError(f"{path}: test {name!r}: `sets` must list four sets (X, Y, A, B)")
        balance = body.get("balance", "cut")
        if balance not in BALANCE_POLICIES:
            raise UsageError(f"{path}: test {name!r}: unknown balance {balance!r} (known: {', '.join(BALANCE_POLICIES)})")
        tests[name] = TestDef(
            name, tuple(sets), body.get("context", "sentence"), body.get("family"), balance,
            tuple((list(body.get("categories", [])) + [None] * 4)[:4]),
            paper=body.get("paper", DEFAULT_PAPER), unbleached=bool(body.get("unbleached", False)),
        )
    return tests


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
    return pl.DataFrame([{"test": t.name, "paper": t.paper, "context": t.context, "family": t.family,
                          "unbleached": t.unbleached, "source": t.source,
                          "X": t.sets[0], "Y": t.sets[1], "A": t.sets[2], "B": t.sets[3]} for t in tests.values()],
                        schema_overrides={"paper": pl.String, "family": pl.String})


def load(con=None) -> dict[str, TestDef]:
    tests = load_toml()
    if con is not None:
        for name, source, *sets in con.execute(
            "SELECT name, source, x_set, y_set, a_set, b_set FROM imported_tests ORDER BY name"
        ).fetchall():
            tests[name] = TestDef(name, tuple(sets), "sentence", None, "none", source=source)
    return tests


def get(con, name: str) -> TestDef:
    tests = load(con)
    if name not in tests:
        close = [t for t in tests if name.lower() in t.lower()][:5]
        hint = f" (did you mean: {', '.join(close)}?)" if close else " (see `stimkit catalog`)"
        raise UsageError(f"unknown test {name!r}{hint}")
    return tests[name]


def fetch_sets(con, test: TestDef) -> dict[str, pl.DataFrame]:
    return {role: fetch(con, test.sql(role), f"test {test.name!r} set {role.upper()}") for role in ROLES}


def default_specs(lists: dict) -> list[SetSpec]:
    """Every catalog set, then every word list under `word` and `may2019`."""
    specs = [s for t in load_toml().values() for s in t.set_specs()]
    for name in lists:
        specs += [SetSpec(name, "word"), SetSpec(name, "may2019")]
    return list(dict.fromkeys(specs))


def select(con, patterns: list[str] | None, everything: bool = False, source: str | None = None) -> list[TestDef]:
    """Tests by shell-style patterns over catalog and imported names ('sent-weat*',
    '*angry*'), or every test; `source` narrows to the catalog or to imported tests.
    A pattern that matches nothing is an error: a typo must not run a smaller study."""
    from fnmatch import fnmatchcase

    if source is not None and source not in SOURCES:
        raise UsageError(f"--source must be one of {', '.join(SOURCES)}, not {source!r}")
    known = [t for t in load(con).values()
             if source is None or (t.source == "catalog") == (source == "catalog")]
    if everything:
        return known
    chosen: dict[str, TestDef] = {}
    for pattern in patterns or []:
        found = [t for t in known if fnmatchcase(t.name, pattern)]
        if not found:
            close = [t.name for t in known if pattern.strip("*?").lower() in t.name.lower()][:5]
            hint = f" (did you mean: {', '.join(close)}?)" if close else " (see `stimkit catalog`)"
            raise UsageError(f"no test matches {pattern!r}" + (f" among {source} tests" if source else "") + hint)
        chosen.update((t.name, t) for t in found)
    return list(chosen.values())


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


def table(con, paper: str | None = None) -> pl.DataFrame:
    """What `stimkit catalog` lists: the tests of one paper, or every test and the WEFAT
    entries (one target set, and a property in place of Y)."""
    from .wefat import load_catalog

    df = listing(by_paper(load(con), paper))
    if paper is not None:
        return df
    entries = [{"test": t.name, "paper": "caliskan-2017", "context": t.context, "family": "WEFAT", "source": "catalog",
                "X": t.targets, "Y": f"property {t.property}", "A": t.a, "B": t.b} for t in load_catalog().values()]
    return pl.concat([df, pl.DataFrame(entries)], how="diagonal_relaxed")


__all__ = ["BALANCE_POLICIES", "CONTEXTS", "ROLES", "SENTBIAS_KEYS", "TestDef", "by_paper", "default_specs", "fetch",
           "fetch_sets", "get", "is_sql", "load", "load_toml", "papers", "select", "select_stimuli", "set_sql",
           "sizes", "table"]
