"""Contexts from real text: `stimkit import corpus PATH...` (CEAT, Guo & Caliskan 2021).

Reads plain text (.txt: a file is a document, a line a record), JSONL (.jsonl/.ndjson: a
record a line, its `text` field; its `id` field, if any, names the document) or Parquet
(.parquet: a `text` column, an `id` column if any), splits each record into sentences, finds
the words of the chosen word lists, and samples up to N contexts a word, seeded. Each word list
becomes a stimulus set `<list>@corpus:<name>`: a sentence a stimulus, with the word's span (so
c-word reads the word's own token vector and a sentence encoder pools the sentence), its
document as the stimulus' context (`context_id`: the crossed model's template factor; a
sentence is unique to its word, so the factor that words share is the document it comes
from), and its provenance (document, line, character offset) in `corpus_contexts`.

Matching: whole words (word boundaries), the forms the list gives (a count noun's singular and
plural: inflection as the list resolves it); names (kind `name`) match in their own case, every
other word in any case (`case`: "auto"; "sensitive" or "insensitive" for all).

The scan streams: Python reads the files a line at a time (refusing a file that is binary or
not UTF-8, or a line over the limit, naming file and line) into Arrow batches of sentences
that DuckDB scans, matching with one RE2 pattern a case rule; each word keeps the N
occurrences of smallest seeded hash (`min_by(..., N)`, a bounded heap), so memory stays flat in
the corpus size. Nothing is stored unless every list has an occurrence.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .. import store
from ..errors import InputError, UsageError, first_line
from ..stimuli.inputs import check_name

TEXT, JSONL, PARQUET = "text", "jsonl", "parquet"
SUFFIXES = {".txt": TEXT, ".text": TEXT, ".jsonl": JSONL, ".ndjson": JSONL, ".parquet": PARQUET}
MAX_LINE_CHARS = 1_000_000      # a record over this is refused (--max-line-chars)
BATCH = 65_536                  # sentences per Arrow batch
CASES = ("auto", "sensitive", "insensitive")
PREFIX = "corpus:"              # a corpus set's template set: corpus:<name>
GENERATOR = "corpus-1"
# A sentence: up to and including its final punctuation (and closing quotes or brackets), or the
# rest of the record. Abbreviations ("Mr.") end a sentence here: a known limit of a rule this plain.
_SENTENCE = re.compile(r"[^.!?\s][^.!?]*(?:[.!?]+[\"')\]]*|$)")


@dataclass(frozen=True)
class WordCount:
    wordlist: str
    word: str
    found: int       # occurrences in the corpus
    sampled: int     # contexts kept (<= per_word)


@dataclass
class CorpusImport:
    name: str
    sets: list[dict]             # generate.write's report rows
    counts: list[WordCount]
    n_records: int
    n_sentences: int
    few: list[WordCount]         # words with fewer than min_contexts contexts


def kind_of(path: Path) -> str:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise UsageError(f"{path}: unknown corpus format (known suffixes: {', '.join(sorted(SUFFIXES))})")
    return kind


def _check_text(data: bytes, path: Path, line: int) -> str:
    if b"\x00" in data:
        raise InputError(f"{path}:{line}: a binary file (a NUL byte), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}:{line}: not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def records(path: Path, max_chars: int = MAX_LINE_CHARS):
    """(document, line, text) of each record of one file, read a line at a time."""
    kind = kind_of(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if kind == PARQUET:
        yield from _parquet_records(path)
        return
    limit = 4 * max_chars + 4   # bytes: a UTF-8 character is at most four
    with open(path, "rb") as f:
        number = 0
        while True:
            raw = f.readline(limit + 1)
            if not raw:
                return
            number += 1
            if len(raw) > limit or (len(raw) > max_chars and len(raw.decode("utf-8", "replace")) > max_chars):
                raise InputError(f"{path}:{number}: a line over {max_chars:,} characters (raise it with --max-line-chars)")
            text = _check_text(raw, path, number).rstrip("\r\n")
            if kind == TEXT:
                if text.strip():
                    yield str(path.name), number, text
                continue
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{number}: not JSON: {e.msg}") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise InputError(f"{path}:{number}: a JSONL record needs a string `text` field")
            doc = obj.get("id")
            yield (f"{path.name}#{doc}" if doc is not None else f"{path.name}#{number}"), number, obj["text"]


def _parquet_records(path: Path):
    import duckdb

    con = duckdb.connect()
    try:
        cols = [r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()]
    except duckdb.Error as e:
        raise InputError(f"{path}: not a Parquet file ({first_line(e)})") from None
    if "text" not in cols:
        raise InputError(f"{path}: a Parquet corpus needs a `text` column (has: {', '.join(cols)})")
    doc = "CAST(id AS VARCHAR)" if "id" in cols else "NULL"
    cur = con.execute(f"SELECT {doc}, file_row_number + 1, text FROM read_parquet(?, file_row_number = true)",
                      [str(path)])
    while True:
        chunk = cur.fetchmany(BATCH)
        if not chunk:
            break
        for d, n, text in chunk:
            if text:
                yield (f"{path.name}#{d}" if d is not None else f"{path.name}#{n}"), int(n), text
    con.close()


def sentences(text: str):
    """(character offset, sentence) of each sentence of a record."""
    for m in _SENTENCE.finditer(text):
        s = m.group().rstrip()
        if s:
            yield m.start(), s


def _batches(paths: list[Path], max_chars: int, counter: dict):
    import pyarrow as pa

    schema = pa.schema([("document", pa.string()), ("line", pa.int64()), ("offset", pa.int64()),
                        ("sentence", pa.string())])
    cols = ([], [], [], [])
    for path in paths:
        for doc, line, text in records(path, max_chars):
            counter["records"] += 1
            for offset, s in sentences(text):
                cols[0].append(doc)
                cols[1].append(line)
                cols[2].append(offset)
                cols[3].append(s)
                if len(cols[3]) >= BATCH:
                    counter["sentences"] += len(cols[3])
                    yield pa.record_batch(list(cols), schema=schema)
                    cols = ([], [], [], [])
    counter["sentences"] += len(cols[3])
    yield pa.record_batch(list(cols), schema=schema)


def _forms(word) -> list[str]:
    return list(dict.fromkeys(f for f in (word.text, word.singular, word.plural) if f))


def _sensitive(word, case: str) -> bool:
    return case == "sensitive" or (case == "auto" and word.kind == "name")


def word_pattern(forms: list[str], sensitive: bool) -> str:
    """One RE2/Python pattern for whole-word matches of the forms (longest first)."""
    alts = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return ("" if sensitive else "(?i)") + r"\b(" + alts + r")\b"


def scan(paths: list[Path], lists: dict, per_word: int, seed: int, case: str = "auto",
         max_chars: int = MAX_LINE_CHARS) -> tuple[dict, dict, dict]:
    """Stream the corpus through DuckDB: per (list, word), its number of occurrences and up to
    `per_word` sampled (document, line, offset, sentence), the same for the same corpus and
    seed. Returns (found, sampled, counter)."""
    import duckdb
    import pyarrow as pa

    if case not in CASES:
        raise UsageError(f"unknown --case {case!r} (known: {', '.join(CASES)})")
    keys: dict[bool, dict[str, list[str]]] = {True: {}, False: {}}   # sensitive -> form key -> ["list<US>word"]
    for name, wl in lists.items():
        for w in wl.words:
            sens = _sensitive(w, case)
            for f in _forms(w):
                entry = keys[sens].setdefault(f if sens else f.lower(), [])
                if f"{name}{_US}{w.text}" not in entry:
                    entry.append(f"{name}{_US}{w.text}")
    counter = {"records": 0, "sentences": 0}
    reader = pa.RecordBatchReader.from_batches(
        pa.schema([("document", pa.string()), ("line", pa.int64()), ("offset", pa.int64()), ("sentence", pa.string())]),
        _batches(paths, max_chars, counter))
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.execute("SET preserve_insertion_order = false")
    con.register("corpus", reader)
    # One pass over the stream (an Arrow reader is read once): per sentence, the distinct
    # (list, word) its matches map to, through a MAP literal of the forms (case folded where
    # the word matches in any case); per (list, word), the count and the seeded sample.
    found_lists, conditions = [], []
    for sens, table in keys.items():
        if not table:
            continue
        pat = _sql_string(word_pattern(sorted(table), sens))
        lookup = "MAP {" + ", ".join(f"{_sql_string(k)}: [{', '.join(map(_sql_string, v))}]" for k, v in table.items()) + "}"
        key = "m" if sens else "lower(m)"
        found_lists.append(f"flatten(list_transform(regexp_extract_all(sentence, {pat}, 1), "
                           f"lambda m: coalesce({lookup}[{key}], [])))")
        conditions.append(f"regexp_matches(sentence, {pat})")
    listed = found_lists[0] if len(found_lists) == 1 else f"list_concat({', '.join(found_lists)})"
    sql = f"""
        WITH hits AS (SELECT document, line, "offset", sentence, unnest(list_distinct({listed})) AS lw
                      FROM corpus WHERE {' OR '.join(conditions)})
        SELECT split_part(lw, chr(31), 1) AS wordlist, split_part(lw, chr(31), 2) AS word, count(*) AS found,
               min_by({{'document': document, 'line': line, 'offset': "offset", 'sentence': sentence}},
                      hash(document, line, "offset", {int(seed)}), {int(per_word)}) AS sample
        FROM hits GROUP BY lw"""
    try:
        rows = con.execute(sql).fetchall()
    except duckdb.Error as e:
        cause = e.__cause__ or e.__context__
        if isinstance(cause, InputError):
            raise cause from None
        if "InputError" in str(e) or "line over" in str(e) or "not UTF-8" in str(e) or "binary" in str(e):
            raise InputError(_python_message(str(e))) from None
        raise
    finally:
        con.close()
    found = {(wl, w): n for wl, w, n, _ in rows}
    sampled = {(wl, w): sorted(((s["document"], s["line"], s["offset"], s["sentence"]) for s in sample),
                               key=lambda r: (r[0], r[1], r[2])) for wl, w, _, sample in rows}
    return found, sampled, counter


_US = chr(31)   # between a list's name and a word in the scan's keys


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _python_message(text: str) -> str:
    """The one-line message of an InputError raised inside the Arrow stream DuckDB read."""
    m = re.search(r"InputError: (.*)", text)
    return (m.group(1) if m else text).splitlines()[0]


def span(sentence: str, forms: list[str], sensitive: bool) -> tuple[int, int]:
    m = re.search(word_pattern(forms, sensitive), sentence)
    return m.start(1), m.end(1)


def import_corpus(con, paths: list[str | Path], lists: dict, names: list[str], *, name: str = "corpus",
                  per_word: int = 100, seed: int = 0, min_contexts: int | None = None, case: str = "auto",
                  max_chars: int = MAX_LINE_CHARS) -> CorpusImport:
    """Scan the corpus for the words of the lists `names`, sample, and store a set per list
    (one transaction; nothing stored when a list has no occurrence at all). `few`: the words
    with fewer than `min_contexts` contexts (default: the lesser of 10 and `per_word`)."""
    import pyarrow as pa

    from ..stimuli import generate

    check_name(name, "corpus", forbid="@/: ")
    if per_word < 1:
        raise UsageError("--per-word must be at least 1")
    if not names:
        raise UsageError("say which word lists to look for: --wordlist/-w (repeatable)")
    missing = [n for n in names if n not in lists]
    if missing:
        raise UsageError(f"unknown word list {missing[0]!r}")
    chosen = {n: lists[n] for n in dict.fromkeys(names)}
    paths = [Path(p) for p in paths]
    for p in paths:
        kind_of(p)
        if not p.is_file():
            raise InputError(f"{p}: no such file")
    found, sampled, counter = scan(paths, chosen, per_word, seed, case, max_chars)
    where = ", ".join(str(p) for p in paths[:3]) + (", ..." if len(paths) > 3 else "")
    for n, wl in chosen.items():
        if not any((n, w.text) in found for w in wl.words):
            raise InputError(f"no word of list {n!r} occurs in {where} ({counter['sentences']:,} sentences)")
    template_set = f"{PREFIX}{name}"
    counts, sets = [], []
    for n, wl in chosen.items():
        rows = {c: [] for c in ("ordinal", "wordlist", "word_ordinal", "word", "kind", "person", "template_id",
                                "template_text", "stimulus", "span_start", "span_end", "context_id")}
        prov = {"ordinal": [], "document": [], "line": [], "char_offset": []}
        for i, w in enumerate(wl.words):
            picks = sampled.get((n, w.text), [])
            counts.append(WordCount(n, w.text, found.get((n, w.text), 0), len(picks)))
            for doc, line, offset, sentence in picks:
                start, end = span(sentence, _forms(w), _sensitive(w, case))
                k = len(rows["ordinal"])
                for c, v in (("ordinal", k), ("wordlist", n), ("word_ordinal", i), ("word", w.text), ("kind", w.kind),
                             ("person", w.person), ("template_id", f"{template_set}/{doc}:{line}"),
                             ("template_text", None), ("stimulus", sentence), ("span_start", start),
                             ("span_end", end), ("context_id", doc)):
                    rows[c].append(v)
                for c, v in (("ordinal", k), ("document", doc), ("line", line), ("char_offset", offset)):
                    prov[c].append(v)
        payload = {"generator": GENERATOR, "wordlist": {"name": wl.name, "words": [w.as_dict() for w in wl.words]},
                   "template_set": template_set, "case": case, "per_word": per_word, "seed": seed,
                   "contexts": [rows["stimulus"], rows["context_id"], prov["line"], prov["char_offset"]]}
        version = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        sets.append((f"{n}@{template_set}", n, wl, version, rows, prov))
    report = []
    with store.transaction(con):
        seq = store.next_seq(con)
        for set_name, n, wl, version, rows, prov in sets:
            exists = store.one(con, "SELECT 1 FROM stimulus_sets WHERE version = ?", [version])
            if not exists:
                record = generate.set_record(version, set_name, n, template_set, None, wl.category,
                                             ", ".join(str(p) for p in paths), len(wl.words), len(rows["stimulus"]),
                                             {"corpus": {"name": name, "files": [str(p) for p in paths],
                                                         "per_word": per_word, "seed": seed, "case": case}},
                                             wl.provenance)
                store.insert(con, "stimulus_sets", [record])
                store.insert(con, "stimuli", pa.table({"set_version": [version] * len(rows["stimulus"]), **rows}))
                store.insert(con, "corpus_contexts", pa.table({"set_version": [version] * len(prov["ordinal"]), **prov}))
                store.insert(con, "corpus_words",
                             [{"set_version": version, "word": c.word, "found": c.found, "sampled": c.sampled}
                              for c in counts if c.wordlist == n])
            current = store.one(con, "SELECT version FROM current_sets WHERE name = ?", [set_name])
            if current is None or current[0] != version:
                con.execute("INSERT INTO set_log (name, version, seq) VALUES (?, ?, ?)", [set_name, version, seq])
                seq += 1
            report.append({"name": set_name, "version": version, "status": "unchanged" if exists else "new",
                           "n_words": sum(1 for c in counts if c.wordlist == n and c.sampled),
                           "n_stimuli": len(rows["stimulus"])})
    few = [c for c in counts if c.sampled < (min(10, per_word) if min_contexts is None else min_contexts)]
    return CorpusImport(name, report, counts, counter["records"], counter["sentences"], few)


def context_counts(con, versions: list[str]) -> list[tuple[str, str, int, int]]:
    """(set name, word, contexts found, contexts kept) of the corpus sets among `versions`."""
    if not versions:
        return []
    marks = ", ".join("?" for _ in versions)
    return store.rows(con, f"""SELECT s.name, w.word, w.found, w.sampled FROM corpus_words w
                               JOIN stimulus_sets s ON s.version = w.set_version
                               WHERE w.set_version IN ({marks}) ORDER BY s.name, w.sampled, w.word""", versions)
