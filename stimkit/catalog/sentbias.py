"""The published SEAT JSON format (targ1/targ2/attr1/attr2 -> {category, examples}): export and import."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .. import StimkitError, store
from . import tests as catalog
from ..stimuli.generate import GENERATOR_VERSION, insert_set
from ..stimuli.balance import balance as balance_sets
from ..stimuli.inputs import check_name, read_text
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
    names = names or list(tests)
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


def read(path: Path) -> dict:
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
        for i, text in enumerate(entry["examples"]):
            text = clean_text(text, f"{path}: {key!r} example {i + 1}", "example")
            if text in seen:
                raise StimkitError(f"{path}: {key!r} example {i + 1} {text!r} repeats example {seen[text] + 1} "
                                   "(after Unicode NFC normalisation)")
            seen[text] = i
            cleaned.append(text)
        entry["examples"] = cleaned
    return data


def import_dir(con, directory: Path, prefix: str = "import:", override: bool = False) -> list[dict]:
    """Every published-format file of `directory` as a test `<prefix><file stem>`. A name
    that is a catalog test's would replace it: refused unless `override`, and then
    recorded in the imported sets' provenance."""
    directory = Path(directory)
    files = sorted(directory.glob("*.jsonl")) + sorted(directory.glob("*.json"))
    if not files:
        raise StimkitError(f"{directory}: no .jsonl or .json files to import")
    parsed = [(p, read(p)) for p in files]  # validate every file before writing any
    builtin = catalog.load_toml()
    for p in files:
        name = check_name(f"{prefix}{p.stem}", "test", f"{p} with --prefix {prefix!r}")
        if name in builtin and not override:
            raise StimkitError(f"{p}: test {name!r} would replace the catalog test of that name; "
                               "choose a --prefix, or pass --override")
    report = []
    with store.transaction(con):
        seq = store.next_seq(con)
        for path, data in parsed:
            test_name = f"{prefix}{path.stem}"
            set_names = []
            for role, key in catalog.SENTBIAS_KEYS.items():
                entry = data[key]
                examples = entry["examples"]
                name = f"{test_name}/{key}"
                payload = json.dumps({"generator": GENERATOR_VERSION, "name": name, "imported": entry}, sort_keys=True)
                version = hashlib.sha256(payload.encode()).hexdigest()[:16]
                if not store.one(con, "SELECT 1 FROM stimulus_sets WHERE version = ?", [version]):
                    n = len(examples)
                    rows = {
                        "ordinal": list(range(n)), "wordlist": [name] * n, "word_ordinal": list(range(n)),
                        "word": examples, "kind": ["text"] * n, "person": [None] * n,
                        "template_id": [None] * n, "template_text": [None] * n, "stimulus": examples,
                        "span_start": [0] * n, "span_end": [len(e) for e in examples],
                    }
                    replaced = [{"test": test_name, "builtin": "catalog", "user": str(path)}] if test_name in builtin else []
                    insert_set(con, version, name, name, None, None, entry.get("category") or key,
                               str(path), n, rows, {"overrides": replaced} if replaced else None)
                con.execute("INSERT INTO set_log (name, version, seq) VALUES (?, ?, ?)", [name, version, seq])
                seq += 1
                set_names.append(name)
            con.execute(
                "INSERT OR REPLACE INTO imported_tests (name, source, x_set, y_set, a_set, b_set) VALUES (?, ?, ?, ?, ?, ?)",
                [test_name, str(path), *set_names],
            )
            report.append({"test": test_name, "file": str(path), "sizes": [len(data[k]["examples"]) for k in catalog.SENTBIAS_KEYS.values()]})
    return report


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
