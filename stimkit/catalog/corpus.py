"""Contexts from real text: `stimkit import corpus PATH...` (CEAT, Guo & Caliskan 2021).

Reads plain text (any name but the ones below: .txt, .cor, none; a line a record), JSONL
(.jsonl/.ndjson: a record a line, its `text` field) or Parquet (.parquet: a `text` column), each
but Parquet also gzip-compressed (`.gz` after the name), in UTF-8 or the `encoding` given; splits
each record into sentences, finds
the words of the chosen word lists, and samples up to N contexts a word, seeded. Each word list
becomes a stimulus set `<list>@corpus:<name>`: a sentence a stimulus, with the word's span (so
c-word reads the word's own token vector and a sentence encoder pools the sentence), its
document as the stimulus' context (`context_id`: the crossed model's template factor; a
sentence is unique to its word, so the factor that words share is the document it comes
from), and its provenance (document, line, character offset) in `corpus_contexts`.

What a document is (`document`, the command's --document): "file" (every record of a file),
"record" (each line or row its own document, `<file>#<line>`) or the name of a field of the
JSONL records or Parquet columns (`<file>#<value>`, every record must have it). Default (None):
for JSONL and Parquet the record, named by its `document` field, else its `id` field, where it
has one; for text the file (a text file holding one text). The documents are the levels of the
crossed model's context factor, so a corpus kept as one file of a record a line (gensim's Lee
corpus: an article a line) needs "record" for that model to have more than one level.

Files are named by their path relative to the folder the files share (`2001/speech.txt`
and `2005/speech.txt` are two documents); a folder given is read whole (its files of the known
names, FOLDER_SUFFIXES, recursively; a file named on the command line is read whatever its name).

Text as it comes: each record is cleaned (C0/C1 control characters but tab and newline, and
whole ANSI escape sequences, become a space, as they stood between words; bidi embeddings,
overrides and isolates and private-use characters, stimkit's own span markers among them, are
dropped; each counted) and normalised to NFC, as the words of every list are.

Matching (`Matcher`): text is cut into tokens, each a run of Unicode letters, marks and numbers
(categories L*, M*, N*, with the zero-width joiner and non-joiner), except that in scripts
written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar, Yi) each
character with its marks is a token of its own. A word form is the same tokens in the same
order, with the same characters between them (any run of white space equal to any other), and
its edge punctuation as written (`c++`, `50%`, `#hash`): a word is found where its edge tokens
are whole tokens of the text, so `cat` is not found in `cats` nor `кот` in `котик`, while a word
of a script without spaces is found wherever its characters stand (`日本` in `日本人`: stimkit
has no dictionary to cut such text into words). The forms are the list's (a count noun's
singular and plural: inflection as the list resolves it); names (kind `name`) match in their
own case, every other word in any case (Unicode's full case folding, İ to i: not a language's,
so Turkish `KIZ` folds to `kiz`, not `kız`; `case`: "auto"; "sensitive" or "insensitive" for all).

The scan streams: Python reads the files a line at a time (refusing a file that is binary or
not UTF-8, or a record over the limit, naming file and line), finds the words of each sentence
by a dictionary look-up of its tokens, and hands the sentences that hold a word to DuckDB in
Arrow batches; each word keeps the N occurrences of smallest seeded hash (`min_by(..., N)`, a
bounded heap), so memory stays flat in the corpus size. Memory that grows with the word list:
the look-up table (about 0.6 KB a form, measured: 100,000 words and their plurals, 115 MB) and the
contexts kept (at most N a word, each at most the stimulus limit). A sentence over the stimulus
limit (stimuli.limits: 2,000 characters) is left out and counted, never stored. Nothing is
stored unless every list has an occurrence.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .. import store
from ..errors import InputError, UsageError, first_line
from ..stimuli.inputs import check_name
from ..stimuli.limits import Limits

TEXT, JSONL, PARQUET = "text", "jsonl", "parquet"
SUFFIXES = {".txt": TEXT, ".text": TEXT, ".cor": TEXT, ".jsonl": JSONL, ".ndjson": JSONL, ".parquet": PARQUET}
GZ = ".gz"                      # gzip-compressed: the name before it says the format
# A folder's files that are read: the known names, compressed or not (a file named on the
# command line is read whatever its name: text unless JSONL or Parquet).
FOLDER_SUFFIXES = tuple(sorted(SUFFIXES)) + tuple(sorted(k + GZ for k, v in SUFFIXES.items() if v != PARQUET))
FILE, RECORD = "file", "record"
DOCUMENT_FIELDS = ("document", "id")   # the default's field naming a record's document, first found
ENCODING = "utf-8"
MAX_LINE_CHARS = 1_000_000      # a record over this is refused (--max-line-chars)
# Bounds on the options, each stated in the command's help (exit 2 past them): a record is read
# whole (at most 4 bytes a character), and a word's contexts are held while the corpus streams.
LINE_CHARS_BOUND = 100_000_000
PER_WORD_BOUND = 10_000         # CEAT's own largest sample (Guo & Caliskan 2021: up to 10,000 a word)
SEED_BOUND = 2 ** 63            # the seed goes into DuckDB's hash as a BIGINT
ID_CHARS = 1_000                # a document's name (a JSONL or Parquet `id`), at most
BATCH = 65_536                  # sentences per Arrow batch
DECODE_CHUNK = 1 << 20          # bytes decoded at a time in an encoding other than UTF-8
CASES = ("auto", "sensitive", "insensitive")
PREFIX = "corpus:"              # a corpus set's template set: corpus:<name>
GENERATOR = "corpus-1"
# A sentence: up to and including its final punctuation (and closing quotes or brackets), or the
# rest of the record. Abbreviations ("Mr.") end a sentence here: a known limit of a rule this plain.
# Beside . ! ? the full stops of scripts that have their own: CJK 。！？｡, Arabic ؟, Devanagari । ॥,
# Ethiopic ።.
_ENDS = ".!?\u3002\uff01\uff1f\uff61\u061f\u0964\u0965\u1362"
_SENTENCE = re.compile(rf"[^{_ENDS}\s][^{_ENDS}]*(?:[{_ENDS}]+[\"')\]]*|$)")
# Cleaning: controls become a space (they stood between words: a form feed, a carriage
# return, an escape sequence as a whole); bidi embeddings, overrides and isolates (U+202A-E,
# U+2066-9: they reorder what a terminal shows) and private-use characters (stimkit's span
# markers are U+E000-E07F) are dropped.
_CONTROL = re.compile("\x1b(?:\\[[0-?]*[ -/]*[@-~]?|\\][^\x07\x1b\n]*(?:\x07|\x1b\\\\)?|[@-_])?|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INVISIBLE = re.compile("[\u202a-\u202e\u2066-\u2069\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
_UNWANTED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ue000-\uf8ff\U000f0000-\U0010ffff]")
_WHITE = re.compile(r"\s+")
# Scripts written without spaces between words: a character a token (with its marks).
UNSPACED = ((0x0E00, 0x0EFF),                    # Thai, Lao
            (0x1000, 0x109F),                    # Myanmar
            (0x1780, 0x17FF), (0x19E0, 0x19FF),  # Khmer
            (0x3040, 0x30FF), (0x31F0, 0x31FF),  # Hiragana, Katakana
            (0x3400, 0x4DBF), (0x4E00, 0x9FFF),  # CJK ideographs
            (0xA000, 0xA4CF),                    # Yi
            (0xF900, 0xFAFF), (0xFF66, 0xFF9F),  # CJK compatibility, halfwidth Katakana
            (0x20000, 0x3FFFF))                  # CJK ideographs, planes 2 and 3


@dataclass(frozen=True)
class WordCount:
    wordlist: str
    word: str
    found: int       # sentences holding the word in the corpus
    sampled: int     # contexts kept (<= per_word)


@dataclass
class CorpusImport:
    name: str
    sets: list[dict]             # generate.write's report rows
    counts: list[WordCount]
    n_records: int
    n_sentences: int
    few: list[WordCount]         # words with fewer than min_contexts contexts
    removed: int = 0             # control, bidi and private-use characters taken out of the text
    cleaned: int = 0             # records they were taken out of
    too_long: int = 0            # sentences holding a word, left out: over the stimulus limit
    sentence_chars: int = Limits.sentence_chars
    documents: tuple[str, ...] = ()  # the documents of the contexts kept, sorted (the crossed model's levels)


def kind_of(path: Path) -> str:
    """The format a file is read as, by its name: JSONL, Parquet, else text (`.gz` stripped)."""
    name = path.name.lower()
    inner = Path(name[:-len(GZ)]) if name.endswith(GZ) else path
    kind = SUFFIXES.get(inner.suffix.lower(), TEXT)
    if kind == PARQUET and name.endswith(GZ):
        raise UsageError(f"{path}: a Parquet file compresses its own columns: give it as .parquet, not gzipped")
    return kind


def compressed(path: Path) -> bool:
    return path.name.lower().endswith(GZ)


def check_encoding(encoding: str) -> str:
    """The codec's own name (`latin-1` -> `iso8859-1`), or a UsageError for one Python lacks
    or one that is not a text encoding."""
    import codecs

    try:
        info = codecs.lookup(encoding)
    except (LookupError, TypeError, ValueError):
        raise UsageError(f"unknown --encoding {encoding!r} (e.g. utf-8, latin-1, cp1252, utf-16)") from None
    if not getattr(info, "_is_text_encoding", True):
        raise UsageError(f"--encoding {encoding!r} is not a text encoding")
    return info.name


def check_reading(paths: list[Path], document: str | None, encoding: str) -> None:
    """The reading options against the files, before any is read: a field names none of a
    text file's, and the encoding is Python's."""
    check_document(document)
    check_encoding(encoding)
    if document not in (None, FILE, RECORD):
        text = next((p for p in paths if kind_of(p) == TEXT), None)
        if text is not None:
            raise UsageError(f"{text}: --document {document} names a field, and a text file has none "
                             "(file or record; a field of JSONL or Parquet records)")


def check_document(document: str | None) -> None:
    """--document: file, record or a field's name (None: the format's default)."""
    if document is not None and (not isinstance(document, str) or not document.strip() or len(document) > 200):
        raise UsageError(f"--document must be file, record or a field's name, not {document!r}")


def check_options(per_word: int, seed: int, max_chars: int, min_contexts: int | None) -> None:
    """Each count option within its bound (stated in the command's help), or a UsageError."""
    for option, value, low, high in (("--per-word", per_word, 1, PER_WORD_BOUND),
                                     ("--max-line-chars", max_chars, 1, LINE_CHARS_BOUND),
                                     ("--min-contexts", 0 if min_contexts is None else min_contexts, 0, PER_WORD_BOUND),
                                     ("--seed", seed, -SEED_BOUND, SEED_BOUND - 1)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UsageError(f"{option} must be a whole number from {low:,} to {high:,}, not {value!r}")


def clean(text: str) -> tuple[str, int]:
    """`text` without control, bidi and private-use characters, in NFC; and how many it had."""
    removed = 0
    if _UNWANTED.search(text) is None:   # the common case, in one pass
        return (text, 0) if unicodedata.is_normalized("NFC", text) else (unicodedata.normalize("NFC", text), 0)
    if _CONTROL.search(text) is not None:
        text, removed = _sub_counting(_CONTROL, " ", text)
    if _INVISIBLE.search(text) is not None:
        text, n = _sub_counting(_INVISIBLE, "", text)
        removed += n
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text, removed


def _sub_counting(pattern, replacement: str, text: str) -> tuple[str, int]:
    chars = 0

    def one(m):
        nonlocal chars
        chars += len(m.group())
        return replacement

    return pattern.sub(one, text), chars


def _check_text(data: bytes, path: Path, line: int, document: str) -> str:
    if b"\x00" in data:
        raise InputError(f"{document}:{line}: a binary file (a NUL byte), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{document}:{line}: not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}): "
                         "give the file's encoding with --encoding (e.g. --encoding latin-1)") from None


def corpus_files(paths: list[str | Path]) -> list[Path]:
    """The files to read: each file given, and a folder's corpus files (recursively, sorted);
    a file given twice is read once."""
    files, seen = [], set()
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(Path(d) / f for d, _, names in os.walk(p) for f in names if f.lower().endswith(FOLDER_SUFFIXES))
            if not found:
                raise InputError(f"{p}: a folder without corpus files ({', '.join(FOLDER_SUFFIXES)})")
        else:
            kind_of(p)
            if not p.is_file():
                raise InputError(f"{p}: no such file")
            found = [p]
        for f in found:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files


def documents(files: list[Path]) -> dict[Path, str]:
    """Each file's name as a document: its path relative to the folder the files share, with
    `/` between folders (one file: its base name)."""
    absolute = [f.absolute() for f in files]
    root = os.path.commonpath([str(a.parent) for a in absolute]) if absolute else ""
    return {f: clean(Path(os.path.relpath(a, root)).as_posix())[0] for f, a in zip(files, absolute)}


def records(path: Path, max_chars: int = MAX_LINE_CHARS, document: str | None = None, counter: dict | None = None,
            *, by: str | None = None, encoding: str = ENCODING):
    """(document, line, text) of each record of one file, read a line at a time, its text
    cleaned (`clean`; the characters taken out added to counter["removed"]). `document`: the
    file's name; `by`: what a document is (file, record, a field; None: the format's default)."""
    kind = kind_of(path)
    document = path.name if document is None else document
    counter = {} if counter is None else counter
    check_document(by)
    if by not in (None, FILE, RECORD) and kind == TEXT:
        raise UsageError(f"{document}: --document {by} names a field, and a text file has none "
                         "(file or record; a field of JSONL or Parquet records)")
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    raw_records = (_parquet_records(path, max_chars, document, by) if kind == PARQUET
                   else _line_records(path, kind, max_chars, document, by, check_encoding(encoding)))
    for doc, number, text in raw_records:
        text, removed = clean(text)
        if removed:
            counter["removed"] = counter.get("removed", 0) + removed
            counter["cleaned"] = counter.get("cleaned", 0) + 1
        if text.strip():
            yield doc, number, text


def _line_records(path: Path, kind: str, max_chars: int, document: str, by: str | None = None,
                  encoding: str = ENCODING):
    """The lines of a text or JSONL file: UTF-8 read as bytes (checked a line at a time), any
    other encoding through Python's decoder; a `.gz` file decompressed as it streams."""
    import gzip
    import zlib

    opened = gzip.open(path, "rb") if compressed(path) else open(path, "rb")
    try:
        with opened as f:
            lines = _utf8_lines(f, max_chars, path, document) if encoding == ENCODING else \
                _decoded_lines(f, max_chars, document, encoding)
            for number, text in lines:
                if kind == TEXT:
                    yield (f"{document}#{number}" if by == RECORD else document), number, text
                    continue
                if not text.strip():
                    continue
                yield _jsonl_record(text, document, number, by)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(f"{document}: not a readable gzip file ({first_line(e) or type(e).__name__})") from None


def _over(document: str, number: int, max_chars: int) -> InputError:
    return InputError(f"{document}:{number}: a line over {max_chars:,} characters (raise it with --max-line-chars)")


def _utf8_lines(f, max_chars: int, path: Path, document: str):
    limit = 4 * max_chars + 4   # bytes: a UTF-8 character is at most four
    number = 0
    while True:
        raw = f.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit or (len(raw) > max_chars and len(raw.decode("utf-8", "replace")) > max_chars + 2):
            raise _over(document, number, max_chars)
        text = _check_text(raw, path, number, document).rstrip("\r\n")
        if len(text) > max_chars:
            raise _over(document, number, max_chars)
        yield number, text


def _decoded_lines(f, max_chars: int, document: str, encoding: str):
    """Lines in another encoding, decoded a chunk at a time and cut at "\n" as decoded (UTF-16's
    newline is two bytes); a line grows no longer than the limit, and a byte the encoding
    cannot decode is refused naming its line."""
    import codecs

    decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    number, pending = 0, ""
    while True:
        chunk = f.read(DECODE_CHUNK)
        try:
            text = decoder.decode(chunk, not chunk)
        except UnicodeDecodeError as e:
            # the lines before the bad byte: the text up to it, decoded as far as it goes
            before = codecs.decode(e.object[:e.start], encoding, "replace") if isinstance(e.object, bytes) else ""
            line = number + 1 + (pending + before).count("\n")
            raise InputError(f"{document}:{line}: not {encoding} ({e.reason}): give the file's encoding with "
                             "--encoding") from None
        pieces = (pending + text).split("\n")
        pending = pieces.pop()
        for piece in pieces:
            number += 1
            yield number, _decoded_line(piece.rstrip("\r"), document, number, max_chars)
        if len(pending) > max_chars + 1:
            raise _over(document, number + 1, max_chars)
        if not chunk:
            if pending:
                number += 1
                yield number, _decoded_line(pending.rstrip("\r"), document, number, max_chars)
            return


def _decoded_line(text: str, document: str, number: int, max_chars: int) -> str:
    if "\x00" in text:
        raise InputError(f"{document}:{number}: a binary file (a NUL character), not text")
    if len(text) > max_chars:
        raise _over(document, number, max_chars)
    return text


def _jsonl_record(text: str, document: str, number: int, by: str | None = None) -> tuple[str, int, str]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{document}:{number}: not JSON: {e.msg}") from None
    except RecursionError:   # json's decoder recurses a level a bracket
        raise InputError(f"{document}:{number}: JSON nested too deep to read") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        raise InputError(f"{document}:{number}: a JSONL record needs a string `text` field")
    if by == FILE:
        return document, number, obj["text"]
    if by == RECORD:
        return f"{document}#{number}", number, obj["text"]
    field = by or next((f for f in DOCUMENT_FIELDS if obj.get(f) is not None), None)
    doc = None if field is None else obj.get(field)
    if by is not None and doc is None:
        raise InputError(f"{document}:{number}: a record without a `{by}` field (--document {by})")
    if doc is not None and (isinstance(doc, bool) or not isinstance(doc, (str, int))):
        raise InputError(f"{document}:{number}: a record's `{field}` must be a string or a whole number")
    return _named(document, doc, number), number, obj["text"]


def _named(document: str, doc, number: int) -> str:
    """A record's document: the file's `#` its id (cleaned, bounded), else its line or row."""
    if doc is None:
        return f"{document}#{number}"
    doc = clean(str(doc))[0]
    if len(doc) > ID_CHARS:
        raise InputError(f"{document}:{number}: an `id` of {len(doc):,} characters, over {ID_CHARS:,}")
    return f"{document}#{doc}"


def _parquet_records(path: Path, max_chars: int, document: str, by: str | None = None):
    """The rows of a Parquet file, each `text` cell under the record limit. A row group whose
    text column would unpack to more than its rows could hold at the limit is refused from
    the file's footer, before any of it is unpacked: a few kilobytes can hold gigabytes."""
    import duckdb
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except Exception as e:  # noqa: BLE001 -- pyarrow's errors for a file that is not Parquet vary by kind
        raise InputError(f"{document}: not a Parquet file ({first_line(e)})") from None
    names = [meta.schema.column(i).path for i in range(meta.num_columns)]
    if "text" not in names:
        raise InputError(f"{document}: a Parquet corpus needs a `text` column (has: {', '.join(names)})")
    column = names.index("text")
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        unpacked = group.column(column).total_uncompressed_size
        if unpacked > 4 * max_chars * max(group.num_rows, 1) + 2 ** 20:
            raise InputError(f"{document}: row group {g + 1} unpacks to {unpacked:,} bytes of text in "
                             f"{group.num_rows:,} rows, over --max-line-chars {max_chars:,} a row")
    con = duckdb.connect()
    try:
        types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
                                 [str(path)]).fetchall())
        if types.get("text") != "VARCHAR":
            raise InputError(f"{document}: the `text` column holds {types.get('text')}, not text")
        if by not in (None, FILE, RECORD) and by not in types:
            raise InputError(f"{document}: no `{by}` column for --document {by} (has: {', '.join(types)})")
        # a row's document: the field named, or by default its first non-null DOCUMENT_FIELDS
        fields = [] if by in (FILE, RECORD) else [by] if by is not None else [f for f in DOCUMENT_FIELDS if f in types]
        field = fields[0] if fields else None
        cast = ", ".join(f'CAST("{f.replace(chr(34), chr(34) * 2)}" AS VARCHAR)' for f in fields)
        doc = f"left(coalesce({cast}), {ID_CHARS + 1})" if fields else "NULL"
        # a cell over the limit never reaches Python: DuckDB measures it and passes its length
        cur = con.execute(f"SELECT {doc}, file_row_number + 1, length(text) AS n, "
                          f"CASE WHEN length(text) <= {int(max_chars)} THEN text END "
                          f"FROM read_parquet(?, file_row_number = true)", [str(path)])
        while True:
            chunk = cur.fetchmany(BATCH)
            if not chunk:
                break
            for d, row, n, text in chunk:
                if n is not None and n > max_chars:
                    raise InputError(f"{document}: row {row:,}: a text of {n:,} characters, over {max_chars:,} "
                                     "(raise it with --max-line-chars)")
                if field is not None and by is not None and d is None:
                    raise InputError(f"{document}: row {row:,}: no `{by}` value (--document {by})")
                if text:
                    yield (document if by == FILE else _named(document, d, int(row))), int(row), text
    except duckdb.Error as e:
        raise InputError(f"{document}: not a readable Parquet file ({first_line(e)})") from None
    finally:
        con.close()


def sentences(text: str):
    """(character offset, sentence) of each sentence of a record."""
    for m in _SENTENCE.finditer(text):
        s = m.group().rstrip()
        if s:
            yield m.start(), s


@functools.cache
def _token_pattern() -> re.Pattern:
    """Tokens: a run of letters, marks and numbers of scripts with spaces, or a character of a
    script without spaces with its marks. Letters and numbers are `[^\\W_]` (Python's own
    Unicode test: exactly categories L* and N*, and fast); marks (M*, as this Python's
    unicodedata has them, and the zero-width joiners) a class built once, its characters past
    the Basic Multilingual Plane tested only for such a character (a long class is slow to fail
    on the spaces and punctuation between words)."""
    marks = [cp for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp))[0] == "M"] + [0x200C, 0x200D]

    def char_class(cps):
        runs = []
        for cp in sorted(cps):
            if runs and cp == runs[-1][1] + 1:
                runs[-1][1] = cp
            else:
                runs.append([cp, cp])
        return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in runs) + "]"

    u = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in UNSPACED)
    word = f"[^\\W_{u}]"                      # a letter or number of a script with spaces
    mark = (f"(?:{char_class(c for c in marks if c <= 0xFFFF)}"
            f"|(?=[\\U00010000-\\U0010ffff]){char_class(c for c in marks if c > 0xFFFF)})")
    return re.compile(f"{word}+(?:{mark}+{word}*)*|{mark}+(?:{word}+{mark}*)*|(?=[^\\W_])[{u}]{mark}*")


@functools.cache
def _run_pattern() -> re.Pattern:
    """Runs of letters and numbers of scripts with spaces, and each character of a script
    without spaces: the quick test of a sentence (`Matcher.maybe`). A token's first run is a
    run here too, so a sentence none of whose runs begins a form holds none."""
    u = "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in UNSPACED)
    return re.compile(f"[^\\W_{u}]+|[{u}]")


@functools.cache
def _split_pattern() -> re.Pattern:
    return re.compile(f"({_token_pattern().pattern})")


@functools.cache
def _special() -> re.Pattern:
    """A mark, a character of a script without spaces, or one past the Basic Multilingual
    Plane: text without any is cut into tokens by `[^\\W_]+` alone (the same tokens, faster)."""
    marks = [cp for cp in range(0x10000) if unicodedata.category(chr(cp))[0] == "M"] + [0x200C, 0x200D]
    bmp = [cp for lo, hi in UNSPACED if hi <= 0xFFFF for cp in range(lo, hi + 1)]
    runs = []
    for cp in sorted(set(marks + bmp)):
        if runs and cp == runs[-1][1] + 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    return re.compile("[" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in runs) + "\\U00010000-\\U0010ffff]")


_SIMPLE_SPLIT = re.compile(r"([^\W_]+)")


def tokens(text: str) -> list[tuple[int, int]]:
    """(start, end) of each token of `text` (see the module's doc)."""
    return [m.span() for m in _token_pattern().finditer(text)]


@dataclass(frozen=True)
class _Form:
    key: tuple[str, str]       # (list, word)
    sensitive: bool
    tokens: tuple[str, ...]    # case folded unless sensitive
    gaps: tuple[str, ...]      # between the tokens, white space as one space
    lead: str                  # before the first token (`#` of `#hash`)
    trail: str                 # after the last (`++` of `c++`)


def fold_case(text: str) -> str:
    """Unicode's full case folding, with the Turkish capital İ folded to i (not to i and a
    combining dot): "İş" is "iş". Turkish I stays i, as in every other language."""
    return text.casefold().replace("i\u0307", "i")


def _fold(text: str, sensitive: bool) -> str:
    return text if sensitive else fold_case(text)


class Matcher:
    """The word forms of lists, found in sentences by a look-up of their first token: memory
    a form, never a pattern that grows with the list (see the module's doc)."""

    def __init__(self, forms: list[tuple[tuple[str, str], str, bool]]):
        self.exact: dict[str, list[_Form]] = {}
        self.folded: dict[str, list[_Form]] = {}
        self.bare: list[tuple[tuple[str, str], str]] = []   # forms without a letter, mark or number
        self.runs: set[str] = set()
        self.always = False          # a form whose first token has no run (marks alone): no quick test
        for key, form, sensitive in forms:
            form = unicodedata.normalize("NFC", form)
            spans = tokens(form)
            if not spans:   # an emoji, ":-)": found as written (no case, no edges to bound)
                self.bare.append((key, form))
                continue
            toks = tuple(_fold(form[a:b], sensitive) for a, b in spans)
            gaps = tuple(_WHITE.sub(" ", _fold(form[spans[i - 1][1]:spans[i][0]], sensitive)) for i in range(1, len(spans)))
            entry = _Form(key, sensitive, toks, gaps, _fold(form[:spans[0][0]], sensitive),
                          _fold(form[spans[-1][1]:], sensitive))
            table = self.exact if sensitive else self.folded
            if entry not in table.get(toks[0], ()):
                table.setdefault(toks[0], []).append(entry)
            # the quick test's key: the first run of the first token, case folded (an exact
            # match is a folded one too, so one pass over the folded sentence tests both)
            runs = _run_pattern().findall(fold_case(form[spans[0][0]:spans[0][1]]))
            if runs:
                self.runs.add(runs[0])
            else:
                self.always = True

    @classmethod
    def of_lists(cls, lists: dict, case: str) -> Matcher:
        if case not in CASES:
            raise UsageError(f"unknown --case {case!r} (known: {', '.join(CASES)})")
        return cls([((name, w.text), f, _sensitive(w, case)) for name, wl in lists.items() for w in wl.words
                    for f in _forms(w)])

    def maybe(self, text: str) -> bool:
        """Whether `text` may hold a form (a token that begins one, or a form without any):
        one pass of C code, before any token is looked at one by one."""
        return bool(self.always or not self.runs.isdisjoint(_run_pattern().findall(fold_case(text)))
                    or any(f in text for _, f in self.bare))

    def occurrences(self, text: str) -> list[tuple[tuple[str, str], int, int]]:
        """(list, word), start, end of every occurrence of a form in `text`."""
        if not self.maybe(text):
            return []
        # one split: the gaps and tokens in turn (gap 0, token 0, ..., token n-1, gap n)
        parts = (_split_pattern() if _special().search(text) else _SIMPLE_SPLIT).split(text)
        gaps, words = parts[0::2], parts[1::2]
        ends = list(itertools.accumulate(map(len, parts)))   # token i is text[ends[2i]:ends[2i + 1]]
        folded = fold_case("\0".join(words)).split("\0") if self.folded else words
        found = []
        for table, toks in ((self.exact, words), (self.folded, folded)):
            if table:
                for i in [i for i, t in enumerate(toks) if t in table]:
                    for f in table[toks[i]]:
                        span = self._at(f, i, toks, gaps, ends)
                        if span is not None:
                            found.append((f.key, *span))
        for key, form in self.bare:
            at = text.find(form)
            while at >= 0:
                found.append((key, at, at + len(form)))
                at = text.find(form, at + 1)
        return found

    def find(self, sentence: str) -> dict[tuple[str, str], tuple[int, int]]:
        """(list, word) -> (start, end) of its first occurrence in the sentence (the longest
        form where two begin at the same place)."""
        hits: dict[tuple[str, str], tuple[int, int]] = {}
        for key, a, b in sorted(self.occurrences(sentence), key=lambda h: (h[1], -h[2])):
            hits.setdefault(key, (a, b))
        return hits

    @staticmethod
    def _at(f: _Form, i: int, toks, gaps, ends) -> tuple[int, int] | None:
        k = len(f.tokens)
        if i + k > len(toks) or (k > 1 and tuple(toks[i:i + k]) != f.tokens):
            return None
        for j in range(1, k):
            if _WHITE.sub(" ", _fold(gaps[i + j], f.sensitive)) != f.gaps[j - 1]:
                return None
        if f.lead and not _fold(gaps[i], f.sensitive).endswith(f.lead):
            return None
        if f.trail and not _fold(gaps[i + k], f.sensitive).startswith(f.trail):
            return None
        return ends[2 * i] - len(f.lead), ends[2 * (i + k - 1) + 1] + len(f.trail)


def _forms(word) -> list[str]:
    return list(dict.fromkeys(f for f in (word.text, word.singular, word.plural) if f))


def _sensitive(word, case: str) -> bool:
    return case == "sensitive" or (case == "auto" and word.kind == "name")


_SCHEMA = (("wordlist", "string"), ("word", "string"), ("document", "string"), ("line", "int64"),
           ("offset", "int64"), ("sentence", "string"))


def _hits(files: dict[Path, str], matcher: Matcher, max_chars: int, cap: int, counter: dict, failure: list,
          by: str | None = None, encoding: str = ENCODING):
    """Arrow batches of (list, word, document, line, offset, sentence): a row for each word a
    sentence holds. An error ends the stream and waits in `failure`, so that it reaches the
    caller as itself, not as DuckDB's message about it."""
    import pyarrow as pa

    schema = pa.schema([(n, getattr(pa, t)()) for n, t in _SCHEMA])
    cols = tuple([] for _ in _SCHEMA)
    try:
        for path, document in files.items():
            for doc, line, text in records(path, max_chars, document, counter, by=by, encoding=encoding):
                counter["records"] += 1
                for offset, s in sentences(text):
                    counter["sentences"] += 1
                    found = {key for key, _, _ in matcher.occurrences(s)}
                    if not found:
                        continue
                    if len(s) > cap:   # the stimulus limit: left out, counted, never stored
                        counter["too_long"] += 1
                        continue
                    for wl, w in sorted(found):
                        for c, v in zip(cols, (wl, w, doc, line, offset, s)):
                            c.append(v)
                    if len(cols[0]) >= BATCH:
                        yield pa.record_batch(list(cols), schema=schema)
                        cols = tuple([] for _ in _SCHEMA)
    except GeneratorExit:       # DuckDB stopped reading: nothing more to hand it
        raise
    except BaseException as e:  # noqa: BLE001 -- handed to the caller whole, after DuckDB lets go
        failure.append(e)
    yield pa.record_batch(list(cols), schema=schema)


def scan(paths: list[Path], lists: dict, per_word: int, seed: int, case: str = "auto",
         max_chars: int = MAX_LINE_CHARS, *, limits: Limits | None = None,
         names: dict[Path, str] | None = None, document: str | None = None,
         encoding: str = ENCODING) -> tuple[dict, dict, dict]:
    """Stream the corpus: per (list, word), the number of sentences holding it and up to
    `per_word` sampled (document, line, offset, sentence), the same for the same corpus and
    seed. Returns (found, sampled, counter); counter: records, sentences, removed (characters
    cleaned out), cleaned (records), too_long (sentences with a word, over the stimulus limit)."""
    import duckdb
    import pyarrow as pa

    check_options(per_word, seed, max_chars, None)
    check_reading([Path(p) for p in paths], document, encoding)
    encoding = check_encoding(encoding)
    matcher = Matcher.of_lists(lists, case)
    cap = (limits or Limits()).sentence_chars
    files = names if names is not None else documents([Path(p) for p in paths])
    counter = {"records": 0, "sentences": 0, "removed": 0, "cleaned": 0, "too_long": 0}
    failure: list[BaseException] = []
    reader = pa.RecordBatchReader.from_batches(pa.schema([(n, getattr(pa, t)()) for n, t in _SCHEMA]),
                                               _hits(files, matcher, max_chars, cap, counter, failure,
                                                                    document, encoding))
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.execute("SET preserve_insertion_order = false")
    con.register("hits", reader)
    sql = f"""
        SELECT wordlist, word, count(*) AS found,
               min_by({{'document': document, 'line': line, 'offset': "offset", 'sentence': sentence}},
                      hash(document, line, "offset", {int(seed)}), {int(per_word)}) AS sample
        FROM hits GROUP BY wordlist, word"""
    try:
        rows = con.execute(sql).fetchall()
    except duckdb.Error:
        if failure:
            raise failure[0] from None
        raise
    finally:
        con.close()
    if failure:
        raise failure[0]
    found = {(wl, w): n for wl, w, n, _ in rows}
    sampled = {(wl, w): sorted(((s["document"], s["line"], s["offset"], s["sentence"]) for s in sample),
                               key=lambda r: (r[0], r[1], r[2])) for wl, w, _, sample in rows}
    return found, sampled, counter


def span(sentence: str, forms: list[str], sensitive: bool) -> tuple[int, int]:
    """(start, end) of the first of the forms in the sentence, as the scan finds it."""
    return Matcher([(("", ""), f, sensitive) for f in forms]).find(sentence)[("", "")]


def import_corpus(con, paths: list[str | Path], lists: dict, names: list[str], *, name: str = "corpus",
                  per_word: int = 100, seed: int = 0, min_contexts: int | None = None, case: str = "auto",
                  max_chars: int | None = MAX_LINE_CHARS, limits: Limits | None = None,
                  document: str | None = None, encoding: str = ENCODING) -> CorpusImport:
    """Scan the corpus for the words of the lists `names`, sample, and store a set per list
    (one transaction; nothing stored when a list has no occurrence at all). `few`: the words
    with fewer than `min_contexts` contexts (default: the lesser of 10 and `per_word`).
    `limits`: the stimulus limits (a sentence's characters, a set's stimuli; default Limits()).
    `document`: what a document is (file, record, a field's name; None: the format's default,
    module doc); `encoding`: the text's (Parquet's text is UTF-8 whatever it says)."""
    import pyarrow as pa

    from ..stimuli import generate

    limits = limits or Limits()
    max_chars = MAX_LINE_CHARS if max_chars is None else max_chars
    check_name(name, "corpus", forbid="@/: ")
    check_options(per_word, seed, max_chars, min_contexts)
    if case not in CASES:
        raise UsageError(f"unknown --case {case!r} (known: {', '.join(CASES)})")
    if not names:
        raise UsageError("say which word lists to look for: --wordlist/-w (repeatable)")
    missing = [n for n in names if n not in lists]
    if missing:
        raise UsageError(f"unknown word list {missing[0]!r}")
    chosen = {n: lists[n] for n in dict.fromkeys(names)}
    check_document(document)
    check_encoding(encoding)
    paths = corpus_files(paths)
    found, sampled, counter = scan(paths, chosen, per_word, seed, case, max_chars, limits=limits,
                                   names=documents(paths), document=document, encoding=encoding)
    where = ", ".join(str(p) for p in paths[:3]) + (", ..." if len(paths) > 3 else "")
    for n, wl in chosen.items():
        if not any((n, w.text) in found for w in wl.words):
            longer = (f"; {counter['too_long']:,} sentences holding a word were over {limits.sentence_chars:,} "
                      "characters" if counter["too_long"] else "")
            raise InputError(f"no word of list {n!r} occurs in {where} ({counter['sentences']:,} sentences{longer})")
        kept = sum(len(sampled.get((n, w.text), ())) for w in wl.words)
        if kept > limits.per_set:
            raise InputError(f"list {n!r} keeps {kept:,} contexts, over the limit of {limits.per_set:,} stimuli a set "
                             f"(lower --per-word, or {limits.how_to_raise('per_set')})")
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
                                                         "per_word": per_word, "seed": seed, "case": case,
                                                         "document": document, "encoding": encoding}},
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
    kept_documents = tuple(sorted({d for _, _, _, _, rows, _ in sets for d in rows["context_id"]}))
    return CorpusImport(name, report, counts, counter["records"], counter["sentences"], few, counter["removed"],
                        counter["cleaned"], counter["too_long"], limits.sentence_chars, kept_documents)


def context_counts(con, versions: list[str]) -> list[tuple[str, str, int, int]]:
    """(set name, word, contexts found, contexts kept) of the corpus sets among `versions`."""
    if not versions:
        return []
    marks = ", ".join("?" for _ in versions)
    return store.rows(con, f"""SELECT s.name, w.word, w.found, w.sampled FROM corpus_words w
                               JOIN stimulus_sets s ON s.version = w.set_version
                               WHERE w.set_version IN ({marks}) ORDER BY s.name, w.sampled, w.word""", versions)
