"""Contexts from real text (catalog.corpus): the US inaugural addresses 1941-2021
(tests/fixtures/corpus/SOURCE.md), counted by hand; provenance, spans, sampling; a c-word test
and the crossed model over them; the bad inputs, each refused in one line with the store unchanged."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.catalog import corpus
from stimkit.cli import app
from stimkit.stimuli import wordlists

from conftest import FIXTURES, snapshot

CORPUS = FIXTURES / "corpus" / "inaugural"
FILES = sorted(CORPUS.glob("*.txt"))
LISTS = ["male_terms", "female_terms", "career", "family"]


@pytest.fixture(scope="module")
def lists():
    return wordlists.load_all()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "c.duckdb"
    args = ["--db", str(path), "import", "corpus", *map(str, FILES), "--name", "inaugural", "-n", "8", "--seed", "0"]
    for n in LISTS:
        args += ["-w", n]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    return path, r.output


def by_hand(lists, name):
    """Occurrences of each word of a list in the fixture corpus, by Python's re, sentence by sentence."""
    counts = {}
    for w in lists[name].words:
        forms = sorted({w.text, w.singular, w.plural} - {None}, key=len, reverse=True)
        flags = 0 if w.kind == "name" else re.I
        pat = re.compile(r"\b(" + "|".join(map(re.escape, forms)) + r")\b", flags)
        n = 0
        for f in FILES:
            for line in f.read_text().splitlines():
                n += sum(1 for _, s in corpus.sentences(line) if pat.search(s))
        counts[w.text] = n
    return counts


def test_counts_equal_a_count_by_hand_and_samples_are_bounded(imported, lists):
    path, output = imported
    con = store.connect(path, read_only=True)
    for name in LISTS:
        stored = dict(store.rows(con, "SELECT w.word, w.found FROM corpus_words w JOIN current_sets s "
                                      "ON s.version = w.set_version WHERE s.name = ?", [f"{name}@corpus:inaugural"]))
        expected = {w: n for w, n in by_hand(lists, name).items() if n}
        assert {w: n for w, n in stored.items() if n} == expected
    # man: its plural men is a form of the word; "he" in any case; at most 8 contexts a word
    assert by_hand(lists, "male_terms")["man"] > 8
    assert store.rows(con, "SELECT max(n) FROM (SELECT count(*) n FROM current_stimuli WHERE set_name LIKE "
                           "'%@corpus:inaugural' GROUP BY set_name, word)") == [(8,)]
    assert "female (0)" in output and "hers (0)" in output   # words with too few contexts are named
    con.close()


def test_spans_and_provenance_point_at_the_text(imported, lists):
    path, _ = imported
    con = store.connect(path, read_only=True)
    rows = store.rows(con, """SELECT st.word, st.stimulus, st.span_start, st.span_end, st.context_id, c.document,
                                     c.line, c.char_offset
                              FROM current_stimuli st JOIN corpus_contexts c USING (set_version, ordinal)
                              WHERE st.set_name = 'male_terms@corpus:inaugural'""")
    assert len(rows) == store.rows(con, "SELECT n_stimuli FROM current_sets WHERE name = 'male_terms@corpus:inaugural'")[0][0]
    for word, sentence, start, end, context, doc, line, offset in rows:
        record = (CORPUS / doc).read_text().split("\n")[line - 1]
        assert record[offset:offset + len(sentence)] == sentence       # (document, line, offset) finds it
        (w,) = [w for w in lists["male_terms"].words if w.text == word]
        assert sentence[start:end].lower() in {w.text, w.singular, w.plural} and context == doc
        assert re.match(r"\W", sentence[end:end + 1] or " ") and (start == 0 or not sentence[start - 1].isalnum())
    con.close()


def test_sample_is_seeded_and_the_same_for_the_same_corpus(tmp_path, lists):
    def sample(seed):
        found, sampled, counter = corpus.scan(FILES, {"family": lists["family"]}, 3, seed)
        return sampled
    assert sample(0) == sample(0) and sample(0) != sample(1)
    found, sampled, counter = corpus.scan(FILES, {"family": lists["family"]}, 3, 0)
    assert all(len(v) == min(3, found[k]) for k, v in sampled.items())
    assert counter["records"] == sum(1 for f in FILES for x in f.read_text().splitlines() if x.strip())


def test_jsonl_and_parquet_read_the_same_contexts(tmp_path, lists):
    import duckdb

    text = FILES[0].read_text().splitlines()
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps({"id": f"p{i}", "text": t}) for i, t in enumerate(text) if t.strip()))
    duckdb.sql(f"COPY (SELECT * FROM read_json('{tmp_path / 'a.jsonl'}')) TO '{tmp_path / 'a.parquet'}' (FORMAT parquet)")
    one = {"family": lists["family"]}
    got = [corpus.scan([tmp_path / f], one, 50, 0)[0] for f in ("a.jsonl", "a.parquet")]
    plain = corpus.scan([FILES[0]], one, 50, 0)[0]
    assert got[0] == got[1] == plain and plain


def test_a_cword_test_over_the_contexts_with_documents_as_the_template_factor(imported):
    import stimkit

    path, _ = imported
    r = CliRunner().invoke(app, ["--db", str(path), "test", "--x", "male_terms@corpus:inaugural",
                                 "--y", "female_terms@corpus:inaugural", "--a", "career@corpus:inaugural",
                                 "--b", "family@corpus:inaugural", "--context", "sentence", "--name", "inaugural-c6",
                                 "-e", "glove-6b-50d"])
    assert r.exit_code == 0, r.output
    # a test over such sets names each word's number of contexts, fewest first
    assert ("reads contexts from a corpus; contexts a word: professional (A) 1, relatives (B) 1, boy (X) 1, "
            in " ".join(r.output.split()))
    r = CliRunner().invoke(app, ["--db", str(path), "test", "inaugural-c6", "--context", "c-word", "-e", "minilm"])
    assert r.exit_code == 0, r.output
    con = store.connect(path, read_only=True)
    (context, d, n_templates, scheme, docs), = store.rows(con, """
        SELECT context, effect_size, n_templates, crossed_scheme,
               (SELECT count(DISTINCT context_id) FROM current_stimuli WHERE set_name IN
                ('male_terms@corpus:inaugural', 'female_terms@corpus:inaugural'))
        FROM results WHERE context = 'c-word'""")
    assert context == "c-word" and -2 < d < 2
    assert n_templates == docs and f"x {docs} templates" in scheme   # the documents are the template factor
    con.close()


def _bad(tmp_path, catalog_db, files, *extra):
    import shutil

    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    con = store.connect(path)
    before = snapshot(con)
    con.close()
    r = CliRunner().invoke(app, ["--db", str(path), "import", "corpus", *map(str, files), "-w", "family", *extra])
    con = store.connect(path)
    assert snapshot(con) == before
    con.close()
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code != 0 and len(lines) == 1, r.output
    return lines[0]


def test_bad_input_no_occurrence(tmp_path, catalog_db):
    f = tmp_path / "none.txt"
    f.write_text("Nothing here names a relation.\nNor here.\n")
    assert "no word of list 'family' occurs in" in _bad(tmp_path, catalog_db, [f])


def test_bad_input_binary_and_not_utf8(tmp_path, catalog_db):
    f = tmp_path / "blob.txt"
    f.write_bytes(b"home is here\n\x00\x01\x02binary\n")
    assert "blob.txt:2: a binary file (a NUL byte)" in _bad(tmp_path, catalog_db, [f])
    # a real one: the 2005 address as NLTK packs it holds Latin-1 bytes
    line = _bad(tmp_path, catalog_db, [*FILES[:2], FIXTURES / "corpus" / "non-utf8" / "2005-Bush.txt"])
    assert "2005-Bush.txt:3: not UTF-8 (byte 0xa1" in line


def test_bad_input_a_100_mb_line(tmp_path, catalog_db):
    f = tmp_path / "long.txt"
    with open(f, "wb") as out:
        out.write(b"home\n")
        chunk = b"family " * 150_000
        for _ in range(100):
            out.write(chunk)
        out.write(b"\n")
    assert f.stat().st_size > 100_000_000
    assert "long.txt:2: a line over 1,000,000 characters (raise it with --max-line-chars)" in _bad(tmp_path, catalog_db, [f])


def test_bad_input_unknown_format_and_list(tmp_path, catalog_db):
    # any name is read as text (a .csv too: tests/test_corpus_documents.py); a gzipped Parquet
    # file is refused, as Parquet compresses its own columns
    f = tmp_path / "a.parquet.gz"
    f.write_bytes(b"\x1f\x8b")
    assert "compresses its own columns" in _bad(tmp_path, catalog_db, [f])


def test_ceat_beside_stimkits_own_estimates_on_the_imported_contexts(imported):
    import stimkit

    path, _ = imported
    with stimkit.open(path) as s:
        (row,) = s.ceat(["inaugural-c6"], ["minilm"], samples=200, seed=0)
        stored = s.con.execute("SELECT effect_size, p_value, crossed_d FROM results WHERE context = 'c-word' "
                               "ORDER BY created_at DESC LIMIT 1").fetchone()
    # stimkit's own d, p and crossed d are the c-word test's, from the same vectors
    assert (row.d, row.p, row.crossed_d) == pytest.approx(stored, abs=1e-12)
    assert row.context == "c-word" and row.n_samples == 200 and row.contexts_min >= 1 and row.contexts_max <= 8
    assert row.words == (7, 6, 4, 5) and -2 < row.ces < 2 and row.tau2 >= 0


def test_names_match_in_their_own_case(tmp_path, lists):
    f = tmp_path / "names.txt"
    f.write_text("John met the family at home.\nA john is not a name here. Bill paid the bill.\n")
    found, sampled, _ = corpus.scan([f], {"male_names": lists["male_names"], "family": lists["family"]}, 5, 0)
    assert found[("male_names", "John")] == 1 and found[("male_names", "Bill")] == 1
    assert found[("family", "family")] == 1 and found[("family", "home")] == 1
    (doc, line, offset, sentence), = sampled[("male_names", "Bill")]
    assert (doc, line, offset, sentence) == ("names.txt", 2, 27, "Bill paid the bill.")
