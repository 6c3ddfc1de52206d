"""CrowS-Pairs (Nangia, Vania, Bhalerao & Bowman 2020) as published: its CSV of sentence pairs.

Every field of the file is kept as provenance (`crows_pairs`, db/031), the sentences become two
stimulus sets, `<name>/more` (sent_more) and `<name>/less` (sent_less), a pair's two sentences
at the same ordinal, so that scoring encoders score them as any stimuli, and the name (default
`crows-pairs`) is a test that `stimkit test crows-pairs -e <scoring encoder>` runs (run.crows).

The whole file is read and checked before anything is written: a pair whose sentences do not
differ, an empty file, a missing column, an unknown direction or bias type is refused with its
line, and nothing is stored.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import astuple, dataclass
from pathlib import Path

from .. import store
from ..errors import InputError, UsageError
from ..stimuli.generate import GENERATOR_VERSION, insert_sets, set_record
from ..stimuli.language import Provenance

DEFAULT_NAME = "crows-pairs"
# The published file's columns (its first, the pair's id, has no name)
COLUMNS = ("", "sent_more", "sent_less", "stereo_antistereo", "bias_type", "annotations", "anon_writer",
           "anon_annotators")
REQUIRED = ("sent_more", "sent_less", "stereo_antistereo", "bias_type")
DIRECTIONS = ("stereo", "antistereo")
BIAS_TYPES = ("race-color", "socioeconomic", "gender", "disability", "nationality", "sexual-orientation",
              "physical-appearance", "religion", "age")
LICENCE = "CC-BY-SA-4.0"
CITATION = "CrowS-Pairs (Nangia, Vania, Bhalerao & Bowman 2020, EMNLP), data/crows_pairs_anonymized.csv"
WARNING = ("The authors warn (after Blodgett et al. 2021) that CrowS-Pairs has significant noise and reliability "
           "problems and may not be a good indicator of social biases in language models; the data hold statements "
           "that may be highly offensive.")


@dataclass(frozen=True)
class CrowsPair:
    """One row of the file, every field as written."""
    ordinal: int
    line: int
    pair_id: str
    sent_more: str
    sent_less: str
    stereo_antistereo: str
    bias_type: str
    annotations: str | None
    anon_writer: str | None
    anon_annotators: str | None

    def record(self, version: str) -> dict:
        return {"version": version, "ordinal": self.ordinal, "line": self.line, "pair_id": self.pair_id,
                "sent_more": self.sent_more, "sent_less": self.sent_less,
                "stereo_antistereo": self.stereo_antistereo, "bias_type": self.bias_type,
                "annotations": self.annotations, "anon_writer": self.anon_writer,
                "anon_annotators": self.anon_annotators}


def read(path: Path, bias_types: tuple[str, ...] | None = BIAS_TYPES) -> list[CrowsPair]:
    """The pairs of a CrowS-Pairs CSV, checked. `bias_types`: those allowed (None: any)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    reader = csv.DictReader(text.splitlines(keepends=True))
    header = reader.fieldnames
    if not header:
        raise InputError(f"{path}: empty CrowS-Pairs file (no header, no pairs)")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"{path} line 1: no column {', '.join(missing)} (a CrowS-Pairs file has "
                         f"{', '.join(c or '<id>' for c in COLUMNS)})")
    id_column = header[0] if header[0] not in REQUIRED else None
    pairs: list[CrowsPair] = []
    line = reader.line_num
    for row in reader:
        start, line = line + 1, reader.line_num  # a quoted sentence may span lines: the record's first
        at = f"{path} line {start}"
        if None in row:
            raise InputError(f"{at}: more fields than the header names")
        pair_id = (row.get(id_column) or "").strip() if id_column is not None else str(len(pairs))
        at = f"{at} (pair {pair_id or len(pairs)})"
        values = {c: row.get(c) for c in REQUIRED}
        empty = [c for c, v in values.items() if v is None or not v.strip()]
        if empty:
            raise InputError(f"{at}: {', '.join(empty)} empty")
        if values["sent_more"].strip() == values["sent_less"].strip():
            raise InputError(f"{at}: sent_more and sent_less are the same sentence ({_short(values['sent_more'])}): "
                             "a pair whose sentences do not differ has nothing to compare")
        direction = values["stereo_antistereo"].strip()
        if direction not in DIRECTIONS:
            raise InputError(f"{at}: stereo_antistereo must be stereo or antistereo, not {direction!r}")
        bias = values["bias_type"].strip()
        if bias_types is not None and bias not in bias_types:
            raise InputError(f"{at}: bias_type {bias!r} is not one of CrowS-Pairs' {', '.join(bias_types)}")
        pairs.append(CrowsPair(len(pairs), start, pair_id or str(len(pairs)),
                               values["sent_more"], values["sent_less"], direction, bias, row.get("annotations"),
                               row.get("anon_writer"), row.get("anon_annotators")))
    if not pairs:
        raise InputError(f"{path}: empty CrowS-Pairs file (a header and no pairs)")
    return pairs


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def version_of(pairs: list[CrowsPair]) -> str:
    """An import's version: the content of its pairs (not the path it came from)."""
    rows = [astuple(p)[2:] for p in pairs]
    return hashlib.sha256(json.dumps({"generator": GENERATOR_VERSION, "crows": rows}).encode()).hexdigest()[:16]


def set_rows(name: str, sentences: list[str], category: str, source: str, origin: Provenance):
    """A stimulus set of the sentences (each its own item), versioned by its name and content."""
    version = hashlib.sha256(json.dumps({"generator": GENERATOR_VERSION, "name": name, "imported": sentences,
                                         "language": origin.hashed()}, sort_keys=True).encode()).hexdigest()[:16]
    n = len(sentences)
    rows = {"ordinal": list(range(n)), "wordlist": [name] * n, "word_ordinal": list(range(n)), "word": sentences,
            "kind": ["text"] * n, "person": [None] * n, "template_id": [None] * n, "template_text": [None] * n,
            "stimulus": sentences, "span_start": [0] * n, "span_end": [len(s) for s in sentences]}
    return version, (set_record(version, name, name, None, None, category, source, n, n, None, origin), rows)


def import_file(con, path: Path, name: str = DEFAULT_NAME, bias_types: tuple[str, ...] | None = BIAS_TYPES) -> dict:
    """Read and check the file, then store its pairs, its two sets and the test's name in one
    transaction. Returns what was imported (name, version, counts, sets)."""
    from ..stimuli.inputs import check_name

    check_name(name, "test", "--name")
    pairs = read(path, bias_types)
    version = version_of(pairs)
    origin = Provenance(licence=LICENCE, source=CITATION)
    more_set, less_set = f"{name}/more", f"{name}/less"
    sets = dict([set_rows(more_set, [p.sent_more for p in pairs], "sent_more", str(path), origin),
                 set_rows(less_set, [p.sent_less for p in pairs], "sent_less", str(path), origin)])
    with store.transaction(con):
        stored = {v for (v,) in store.rows(con, "SELECT version FROM stimulus_sets WHERE version IN (SELECT unnest(?))",
                                           [list(sets)])}
        insert_sets(con, [s for v, s in sets.items() if v not in stored])
        seq = store.next_seq(con)
        store.insert(con, "set_log", [{"name": n, "version": v, "seq": seq + i}
                                      for i, (n, v) in enumerate(zip((more_set, less_set), sets))])
        if not store.one(con, "SELECT 1 FROM crows_pairs WHERE version = ? LIMIT 1", [version]):
            store.insert(con, "crows_pairs", [p.record(version) for p in pairs])
        con.execute("DELETE FROM crows_tests WHERE name = ?", [name])
        store.insert(con, "crows_tests", [{"name": name, "version": version, "source": str(path),
                                           "n_pairs": len(pairs), "more_set": more_set, "less_set": less_set}])
    counts: dict[str, int] = {}
    for p in pairs:
        counts[p.bias_type] = counts.get(p.bias_type, 0) + 1
    return {"test": name, "version": version, "n_pairs": len(pairs), "sets": [more_set, less_set],
            "bias_types": dict(sorted(counts.items(), key=lambda kv: -kv[1])),
            "stereo": sum(p.stereo_antistereo == "stereo" for p in pairs),
            "antistereo": sum(p.stereo_antistereo == "antistereo" for p in pairs)}


def tests(con) -> dict[str, str]:
    """{test name: version} of the imported CrowS tests (none where the store predates db/031)."""
    if not store.one(con, "SELECT 1 FROM information_schema.tables WHERE table_name = 'crows_tests'"):
        return {}  # a store opened read-only before its migration
    return dict(store.rows(con, "SELECT name, version FROM crows_tests ORDER BY name"))


def pairs_of(con, name: str):
    """The stored pairs of a CrowS test, in order (a polars frame)."""
    found = store.one(con, "SELECT version FROM crows_tests WHERE name = ?", [name])
    if not found:
        raise UsageError(f"no CrowS test {name!r}: import one with `stimkit import crows-pairs FILE`")
    return found[0], store.frame(con, "SELECT * FROM crows_pairs WHERE version = ? ORDER BY ordinal", [found[0]])
