"""The published SEAT JSON format (targ1/targ2/attr1/attr2 -> {category, examples}): export and import.

Import is two steps, so an importer of a collection in this format (catalog.weathub) reads
its files here too: `parse_dir` reads and checks every file of a folder (as tests with
their language, provenance and context), `write_tests` stores them in one transaction."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import StimkitError, UsageError, store
from . import definitions as catalog
from ..stimuli.generate import GENERATOR_VERSION, insert_sets, set_record
from ..stimuli.balance import balance as balance_sets
from ..stimuli.inputs import check_name, read_text
from ..stimuli.language import Provenance
from ..stimuli.limits import Limits
from ..stimuli.wordlists import clean_text


def test_json(con, test: catalog.TestDef, balance: str | None = None, seed: int = 0) -> dict:
    sets = catalog.fetch_sets(con, test)
    if balance:
        b = balance_sets(sets["x"], sets["y"], balance, seed, test.name)
        sets["x"], sets["y"] = b.x, b.y
    return {
        catalog.SENTBIAS_KEYS[role]: {
            "category": category(con, test, role, sets[role]),
            "examples": sets[role]["stimulus"].to_list(),
        }
        for role in catalog.ROLES
    }


def export(con, outdir: Path, names: list[str], balance: str | None = None, seed: int = 0,
           force: bool = False) -> list[Path]:
    """One `<test>.jsonl` per test inside `outdir`. A folder that is not empty is refused
    unless `force`; each file is written beside its target and renamed over it, so a
    symlink of that name is replaced, never followed."""
    tests = catalog.load(con)
    outdir = Path(outdir)
    names = names or [n for n, t in tests.items() if not catalog.likelihood_only(t)]  # SEAT's files: embeddings' tests
    for name in names:
        check_name(name, "test", f"export to {outdir}")
    if outdir.exists() and not outdir.is_dir():
        raise StimkitError(f"{outdir}: not a folder")
    if outdir.is_dir() and any(outdir.iterdir()) and not force:
        raise StimkitError(f"{outdir}: folder is not empty (pass --force to replace files of the same name)")
    # Build everything before writing, so a bad test leaves no half-written folder.
    payloads = {name: test_json(con, catalog.get(con, name), balance, seed) for name in names}
    written = []
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        for name, data in payloads.items():
            path = outdir / f"{name}.jsonl"  # the published files are pretty-printed JSON named .jsonl
            replace_file(path, json.dumps(data, indent=2))
            written.append(path)
    except OSError as e:
        raise StimkitError(f"{e.filename or outdir}: cannot write: {e.strerror or e}") from None
    return written


def replace_file(path: Path, text: str) -> None:
    """Write `text` beside `path` and rename it over it: a link of that name is replaced, never
    followed, and a reader never sees half a file. An ordinary file's mode (umask applied)."""
    umask = os.umask(0)
    os.umask(umask)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # a new file: no link followed
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read(path: Path, repeats: list[str] | None = None, limits: Limits = Limits()) -> dict:
    """A published-format file, checked. An example that repeats one before it is refused,
    unless `repeats` is a list: then it is left out and named there ("targ1 'idiot'").
    An example over `limits.sentence_chars` is refused, as a generated sentence would be."""
    try:
        data = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise StimkitError(f"{path}:{e.lineno}: not valid JSON: {e.msg}") from None
    for key in catalog.SENTBIAS_KEYS.values():
        entry = data.get(key) if isinstance(data, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("examples"), list) or not entry["examples"]:
            raise StimkitError(f"{path}: missing or empty {key!r} (expected {{category, examples: [...]}})")
        if not all(isinstance(e, str) and e.strip() for e in entry["examples"]):
            raise StimkitError(f"{path}: {key!r} has an empty or non-string example")
        if not isinstance(entry.get("category", ""), str):
            raise StimkitError(f"{path}: {key!r} has a category that is not a string")
        # as word lists are: NFC, no invisible or control character, no stimulus twice
        cleaned, seen = [], {}
        cap = limits.sentence_chars
        for i, text in enumerate(entry["examples"]):
            if len(text) > cap:  # the cap of a generated sentence holds for an imported one
                raise StimkitError(f"{path}: {key!r} example {i + 1} is {len(text):,} characters, over {cap:,} "
                                   "(raise it with STIMKIT_MAX_SENTENCE_CHARS)")
            text = clean_text(text, f"{path}: {key!r} example {i + 1}", "example")
            if text in seen and repeats is not None:
                repeats.append(f"{key} {text!r}")
                continue
            if text in seen:
                raise StimkitError(f"{path}: {key!r} example {i + 1} {text!r} repeats example {seen[text] + 1} "
                                   "(after Unicode NFC normalisation)")
            seen[text] = i
            cleaned.append(text)
        entry["examples"] = cleaned
    return data


@dataclass(frozen=True)
class ImportedTest:
    """One published-format file, read and checked, as the test it becomes."""
    name: str
    path: Path
    data: dict                          # targ1, targ2, attr1, attr2 -> {category, examples}
    origin: Provenance = Provenance()   # the language and provenance of its four sets
    context: str | None = None          # None: sentence (May et al.'s files); word
    repeats: tuple[str, ...] = ()       # examples left out as repeats of one before them
    units: str | None = None            # sentences | words (None: words, a user's sentence test's default)


def import_dir(con, directory: Path, prefix: str = "import:", override: bool = False,
               units: str | None = None, *, limits: Limits = Limits()) -> list[dict]:
    """Every published-format file of `directory` as a test `<prefix><file stem>`. A name
    that is a catalog test's would replace it: refused unless `override`, and then
    recorded in the imported sets' provenance. `units`: the tests' units (None: words, the
    default of a user's sentence test; the format names no word per example, so each
    example is its own word and the two units permute the same items)."""
    from ..choices import UNITS

    if units is not None and units not in UNITS:
        raise UsageError(f"--units {units!r}: unknown units (known: {', '.join(UNITS)})")
    return write_tests(con, parse_dir(directory, prefix, override, units=units, limits=limits))


def parse_dir(directory: Path, prefix: str = "import:", override: bool = False, origin: Provenance = Provenance(),
              context: str | None = None, drop_repeats: bool = False, units: str | None = None, *,
              limits: Limits = Limits()) -> list[ImportedTest]:
    """Every published-format file of `directory`, read and checked (nothing written), as
    tests named `<prefix><file stem>` whose sets have the language and provenance `origin`.
    drop_repeats: an example repeating one before it is left out (named in the test's
    `repeats`) instead of refused."""
    directory = Path(directory)
    files = sorted(directory.glob("*.jsonl")) + sorted(directory.glob("*.json"))
    if not files:
        raise StimkitError(f"{directory}: no .jsonl or .json files to import")
    builtin = catalog.load_toml()
    found = []
    for p in files:
        name = check_name(f"{prefix}{p.stem}", "test", f"{p} with --prefix {prefix!r}")
        if name in builtin and not override:
            raise StimkitError(f"{p}: test {name!r} would replace the catalog test of that name; "
                               "choose a --prefix, or pass --override")
        repeats: list[str] | None = [] if drop_repeats else None
        found.append(ImportedTest(name, p, read(p, repeats, limits), origin, context, tuple(repeats or ()), units))
    return found


def write_tests(con, tests: list[ImportedTest]) -> list[dict]:
    """Store parsed tests (their sets, new versions only, and their definitions) in one
    transaction, a few appends in all (an import of hundreds of files is one write)."""
    import pyarrow as pa

    builtin = catalog.load_toml()
    sets, log, defined, report = {}, [], [], []
    for test in tests:
        set_names = []
        for key in catalog.SENTBIAS_KEYS.values():
            entry, name = test.data[key], f"{test.name}/{key}"
            version = set_version(name, entry, test.origin)
            if version not in sets:
                replaced = [{"test": test.name, "builtin": "catalog", "user": str(test.path)}] if test.name in builtin else []
                sets[version] = set_rows(version, name, entry, key, test, {"overrides": replaced} if replaced else None)
            log.append((name, version))
            set_names.append(name)
        defined.append({"name": test.name, "source": str(test.path), **dict(zip(("x_set", "y_set", "a_set", "b_set"),
                                                                                set_names)), "context": test.context,
                        "units": test.units})
        report.append({"test": test.name, "file": str(test.path), "language": test.origin.language,
                       "translation": test.origin.translation, "repeats": list(test.repeats),
                       "sizes": [len(test.data[k]["examples"]) for k in catalog.SENTBIAS_KEYS.values()]})
    with store.transaction(con):
        stored = {v for (v,) in store.rows(con, "SELECT version FROM stimulus_sets WHERE version IN (SELECT unnest(?))",
                                           [list(sets)])}
        insert_sets(con, [s for v, s in sets.items() if v not in stored])
        seq = store.next_seq(con)
        store.insert(con, "set_log", pa.table({"name": [n for n, _ in log], "version": [v for _, v in log],
                                               "seq": list(range(seq, seq + len(log)))}))
        con.execute("DELETE FROM imported_tests WHERE name IN (SELECT unnest(?))", [[d["name"] for d in defined]])
        store.insert(con, "imported_tests", pa.Table.from_pylist(defined, schema=pa.schema(
            [(k, pa.string()) for k in ("name", "source", "x_set", "y_set", "a_set", "b_set", "context", "units")])))
    return report


def set_version(name: str, entry: dict, origin: Provenance) -> str:
    """An imported set's version: its name and examples, and its language and provenance where
    they are not the defaults (as generate hashes a word list's)."""
    hashed = {"generator": GENERATOR_VERSION, "name": name, "imported": entry}
    if origin.hashed():
        hashed["language"] = origin.hashed()
    return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


def set_rows(version: str, name: str, entry: dict, key: str, test: ImportedTest, replaced: dict | None):
    """The stimulus_sets row and stimuli of an imported set (each example one item, its own word)."""
    examples = entry["examples"]
    n = len(examples)
    rows = {"ordinal": list(range(n)), "wordlist": [name] * n, "word_ordinal": list(range(n)), "word": examples,
            "kind": ["text"] * n, "person": [None] * n, "template_id": [None] * n, "template_text": [None] * n,
            "stimulus": examples, "span_start": [0] * n, "span_end": [len(e) for e in examples]}
    return set_record(version, name, name, None, None, entry.get("category") or key, str(test.path), n, n,
                      replaced, test.origin), rows


def category(con, test: catalog.TestDef, role: str, df) -> str:
    """A set's category: the test's own, else the generated set's, else the role."""
    given = test.categories[catalog.ROLES.index(role)]
    if given:
        return given
    if "set_version" in df.columns:
        row = store.one(con, "SELECT category FROM stimulus_sets WHERE version = ?", [df["set_version"][0]])
        if row:
            return row[0]
    return role.upper()
