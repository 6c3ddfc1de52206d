"""What a document is (issue 50, item 7): a corpus of one article a line (the shape of gensim's
Lee corpus, written here) imported with --document record has a document a line, and those are
the levels of the crossed model's context factor; imported as one file, its test says the model
has one level. Any text name (.cor, none, .csv) is read as text, .gz decompressed, --encoding
decodes; a Latin-1 file without it is refused in one line. A test over corpus sets runs as
c-word unless asked for the pooled sentence. JSONL and Parquet documents: the record (or its
`document`/`id` field), a named field, or the file."""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.catalog import corpus
from stimkit.catalog.definitions import adhoc, infer_context
from stimkit.cli import app
from stimkit.errors import UsageError
from stimkit.run import cword

LISTS = {"him": ["he", "him"], "her": ["she", "her"], "work": ["career", "salary"], "kin": ["family", "children"]}

# An article a line, as in lee_background.cor: each a few sentences about a different story.
PLACES = ["Sydney", "Canberra", "Perth", "Hobart", "Darwin", "Adelaide", "Brisbane", "Melbourne", "Cairns",
          "Geelong"]
STORIES = ["the bushfires", "the cricket test", "the budget", "the floods", "the election"]


def article(i: int) -> str:
    place, story = PLACES[i % len(PLACES)], STORIES[i % len(STORIES)]
    return (f"Officials in {place} spoke on {story} on day {i + 1}. "
            f"The minister said he expected the report on {story} within {i % 7 + 2} weeks. "
            f"His deputy said she had cut her salary to fund the relief work in {place}. "
            f"Critics told him the delay could cost many families a home, and {i + 3} children were moved. "
            f"She said her career began in {place}, where her family still lives.")


N_ARTICLES = 30


def lee_like(path):
    path.write_text("".join(article(i) + "\n" for i in range(N_ARTICLES)), encoding="utf-8")
    return path


def lists_dir(tmp_path):
    folder = tmp_path / "wl"
    folder.mkdir(exist_ok=True)
    (folder / "mine.toml").write_text("".join(f'[{n}]\nlanguage = "en"\nwords = {json.dumps(w)}\n\n'
                                              for n, w in LISTS.items()), encoding="utf-8")
    return folder


def invoke(db, *args):
    return CliRunner().invoke(app, ["--db", str(db), *map(str, args)])


def import_args(tmp_path, name, *files_and_options):
    args = ["import", "corpus", *files_and_options, "--name", name, "--wordlist-dir", lists_dir(tmp_path)]
    for n in LISTS:
        args += ["-w", n]
    return args


def adhoc_test(name, corpus_name, *extra):
    return ["test", "--x", f"him@corpus:{corpus_name}", "--y", f"her@corpus:{corpus_name}",
            "--a", f"work@corpus:{corpus_name}", "--b", f"kin@corpus:{corpus_name}", "--name", name,
            "-e", "minilm", *extra]


def one_line_error(r, code):
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert r.exit_code == code and len(lines) == 1, (r.exit_code, r.output)
    assert "Traceback" not in r.output, r.output
    return lines[0]


@pytest.fixture(scope="module")
def lee(tmp_path_factory):
    """The Lee-shaped file imported twice: a document a line (--document record) and as one
    file (the default for text), then a test over each, on MiniLM."""
    tmp = tmp_path_factory.mktemp("lee")
    db = tmp / "s.duckdb"
    f = lee_like(tmp / "lee_background.cor")
    runs = {}
    for name, extra in (("lines", ["--document", "record"]), ("whole", [])):
        r = invoke(db, *import_args(tmp, name, f, *extra))
        assert r.exit_code == 0, r.output
        runs[f"import-{name}"] = " ".join(r.output.split())
    for test, name in (("lee-lines", "lines"), ("lee-whole", "whole")):
        r = invoke(db, *adhoc_test(test, name))
        assert r.exit_code == 0, r.output
        runs[test] = " ".join(r.output.split())
    return db, f, runs


def test_a_record_a_document_gives_a_crossed_d_over_the_articles(lee):
    db, f, runs = lee
    con = store.connect(db, read_only=True)
    try:
        docs = store.rows(con, """SELECT DISTINCT c.document FROM current_stimuli st
                                  JOIN corpus_contexts c USING (set_version, ordinal)
                                  WHERE st.set_name IN ('him@corpus:lines', 'her@corpus:lines') ORDER BY 1""")
        (context, crossed_d, n_templates, scheme, ci_low, ci_high), = store.rows(con, """
            SELECT context, crossed_d, n_templates, crossed_scheme, crossed_ci_low, crossed_ci_high
            FROM results WHERE test = 'lee-lines'""")
    finally:
        con.close()
    # by hand: every article holds he/him and she/her, so each of its lines is a document
    assert [d for d, in docs] == sorted(f"lee_background.cor#{i + 1}" for i in range(N_ARTICLES))
    assert n_templates == N_ARTICLES and f"x {N_ARTICLES} templates" in scheme
    assert crossed_d is not None and ci_low < crossed_d < ci_high
    assert context == "c-word"           # sets from a corpus: the word's own vector by default
    assert "one document" not in runs["lee-lines"]
    assert f"read {N_ARTICLES} records, {5 * N_ARTICLES} sentences; contexts from {N_ARTICLES} documents" \
        in runs["import-lines"]


def test_one_document_has_no_crossed_d_and_the_output_says_how_to_get_more(lee):
    db, _, runs = lee
    con = store.connect(db, read_only=True)
    try:
        (crossed_d, n_templates), = store.rows(con, "SELECT crossed_d, n_templates FROM results WHERE test = 'lee-whole'")
        (docs,), = store.rows(con, "SELECT count(DISTINCT context_id) FROM current_stimuli WHERE set_name LIKE '%@corpus:whole'")
    finally:
        con.close()
    assert docs == 1 and crossed_d is None and n_templates is None
    assert ("test 'lee-whole': every context of X and Y comes from one document (lee_background.cor), so the crossed "
            "model has one level of documents and no crossed d; import the corpus with --document record") in runs["lee-whole"]
    assert ("contexts from 1 document note: every context comes from one document (lee_background.cor): a test over "
            "these sets has no crossed d (one level); --document record makes each line or row a document") \
        in runs["import-whole"]


def test_corpus_sets_default_to_cword_and_the_pooled_sentence_stays_an_option():
    refs = ("him@corpus:lee", "her@corpus:lee", "work@corpus:lee", "kin@corpus:lee")
    assert infer_context(refs) == "c-word"
    assert adhoc("t", refs, None, "none").context == "c-word"
    assert adhoc("t", refs, "sentence", "none").context == "sentence"
    # corpus targets beside template attributes: still c-word; a SQL or @word set: as before
    assert infer_context(refs[:2] + ("pleasant@may2019", "unpleasant@may2019")) == "c-word"
    assert infer_context(refs[:3] + ("SELECT * FROM current_stimuli",)) == "sentence"
    assert infer_context(("a@may2019",) * 4) == "sentence" and infer_context(("a@word",) * 4) == "word"
    test = adhoc("t", refs, None, "none")
    assert cword.in_context(test, "sentence").context == "sentence"
    assert cword.in_context(test, "c-word") is test
    assert cword.in_context(cword.in_context(test, "sentence"), "c-word").context == "c-word"


def test_the_pooled_sentence_on_request(lee):
    db, _, _ = lee
    r = invoke(db, "test", "lee-lines", "--context", "sentence", "-e", "minilm")
    assert r.exit_code == 0, r.output
    con = store.connect(db, read_only=True)
    try:
        contexts = store.rows(con, "SELECT context, effect_size FROM results WHERE test = 'lee-lines' ORDER BY run_id")
    finally:
        con.close()
    assert [c for c, _ in contexts] == ["c-word", "sentence"] and contexts[0][1] != contexts[1][1]


def stimuli_of(db, name):
    con = store.connect(db, read_only=True)
    try:
        return store.rows(con, """SELECT st.word, st.stimulus, c.line, c.char_offset FROM current_stimuli st
                                  JOIN corpus_contexts c USING (set_version, ordinal)
                                  WHERE st.set_name = ? ORDER BY ALL""", [name])
    finally:
        con.close()


@pytest.mark.parametrize("filename", ["lee.cor", "lee", "lee.csv", "lee.cor.gz", "lee.gz"])
def test_any_text_name_and_gzip_import_the_same_contexts(tmp_path, filename):
    plain = lee_like(tmp_path / "plain.txt")
    f = tmp_path / filename
    if filename.endswith(".gz"):
        f.write_bytes(gzip.compress(plain.read_bytes()))
    else:
        f.write_bytes(plain.read_bytes())
    db = tmp_path / "s.duckdb"
    for name, path in (("ref", plain), ("other", f)):
        r = invoke(db, *import_args(tmp_path, name, path, "--document", "record", "-n", "1000"))
        assert r.exit_code == 0, r.output
    got = stimuli_of(db, "kin@corpus:other")
    assert got == stimuli_of(db, "kin@corpus:ref")
    # by hand: "families" twice an article (the family's plural, and "family"), "children" once
    assert len(got) == 3 * N_ARTICLES


def test_a_latin1_file_imports_with_its_encoding_and_is_refused_without(tmp_path):
    f = tmp_path / "lee_latin1.cor"
    text = "".join(article(i).replace("Officials", "Les élus") + " Her café is naïve.\n" for i in range(4))
    f.write_bytes(text.encode("latin-1"))
    db = tmp_path / "s.duckdb"
    line = one_line_error(invoke(db, *import_args(tmp_path, "l1", f)), 1)
    assert line.startswith("error: lee_latin1.cor:1: not UTF-8") and "--encoding" in line
    r = invoke(db, *import_args(tmp_path, "l1", f, "--encoding", "latin-1"))
    assert r.exit_code == 0, r.output
    sentences = [s for _, s, _, _ in stimuli_of(db, "her@corpus:l1")]
    assert sentences.count("Her café is naïve.") == 4   # decoded as written, once an article
    # compressed and in Latin-1 at once: the same contexts
    g = tmp_path / "lee_latin1.cor.gz"
    g.write_bytes(gzip.compress(f.read_bytes()))
    r = invoke(db, *import_args(tmp_path, "l1gz", g, "--encoding", "latin-1"))
    assert r.exit_code == 0, r.output
    assert [s for _, s, _, _ in stimuli_of(db, "her@corpus:l1gz")] == sentences


def test_utf16_is_read_a_line_at_a_time(tmp_path):
    f = tmp_path / "u16.txt"
    f.write_text("Her café.\nShe left.\n", encoding="utf-16")
    got = list(corpus.records(f, encoding="utf-16", by="record"))
    assert got == [("u16.txt#1", 1, "Her café."), ("u16.txt#2", 2, "She left.")]


def test_bad_reading_options_are_refused_in_one_line(tmp_path):
    f = lee_like(tmp_path / "a.txt")
    db = tmp_path / "s.duckdb"
    assert "unknown --encoding 'klingon'" in one_line_error(invoke(db, *import_args(tmp_path, "x", f, "--encoding", "klingon")), 2)
    assert "a.txt: --document topic names a field" in one_line_error(
        invoke(db, *import_args(tmp_path, "x", f, "--document", "topic")), 2)
    bad = tmp_path / "b.txt.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    assert one_line_error(invoke(db, *import_args(tmp_path, "x", bad)), 1).startswith("error: b.txt.gz: not a readable gzip file")
    assert not db.exists() or store.rows(store.connect(db, read_only=True), "SELECT count(*) FROM corpus_contexts") == [(0,)]


def test_jsonl_and_parquet_documents(tmp_path):
    rows = [{"id": 7, "document": "a", "topic": "x", "text": "He spoke."},
            {"id": 8, "document": "a", "topic": "y", "text": "She spoke."},
            {"id": 9, "topic": "y", "text": "He left."}]
    j = tmp_path / "c.jsonl"
    j.write_text("".join(json.dumps(r) + "\n" for r in rows))
    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": [7, 8, 9], "document": ["a", "a", None], "topic": ["x", "y", "y"],
                             "text": [r["text"] for r in rows]}), p)
    for f in (j, p):
        name = f.name
        docs = lambda by: [d for d, _, _ in corpus.records(f, by=by)]  # noqa: E731
        # default: its `document` field, else its `id`
        assert docs(None) == [f"{name}#a", f"{name}#a", f"{name}#9"]
        assert docs("record") == [f"{name}#1", f"{name}#2", f"{name}#3"]
        assert docs("file") == [name] * 3
        assert docs("topic") == [f"{name}#x", f"{name}#y", f"{name}#y"]
        with pytest.raises(Exception) as e:
            list(corpus.records(f, by="document"))   # the third record has none
        assert "document" in str(e.value) and "3" in str(e.value)
    with pytest.raises(UsageError):
        corpus.check_reading([tmp_path / "a.cor"], "topic", "utf-8")


def test_ceat_draws_the_papers_10000_by_default_and_reads_the_pooled_sentence_on_request(lee):
    db, _, _ = lee
    r = invoke(db, "audit", "ceat", "-t", "lee-lines", "-e", "minilm", "--format", "json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["n_samples"] == 10_000 and row["context"] == "c-word"
    r = invoke(db, "audit", "ceat", "-t", "lee-lines", "-e", "minilm", "--context", "sentence", "-n", "50",
               "--format", "json")
    assert r.exit_code == 0, r.output
    (pooled,) = json.loads(r.stdout)
    assert pooled["context"] == "sentence" and pooled["n_samples"] == 50 and pooled["d"] != row["d"]


def test_a_saved_corpus_test_reads_back_as_cword(tmp_path):
    from stimkit.catalog.definitions import load_dir, to_toml

    refs = ("him@corpus:lee", "her@corpus:lee", "work@corpus:lee", "kin@corpus:lee")
    (tmp_path / "t.toml").write_text(to_toml(adhoc("mine", refs, None, "none")))
    assert load_dir(tmp_path)["mine"].context == "c-word"
    (tmp_path / "t.toml").write_text('[mine]\nsets = ["a@word", "b@word", "c@word", "d@word"]\ncontext = "c-word"\n')
    with pytest.raises(UsageError):
        load_dir(tmp_path)


def test_another_encoding_keeps_the_line_limit_and_names_a_bad_line(tmp_path):
    from stimkit.errors import InputError

    f = tmp_path / "long.txt"
    f.write_bytes(("short line\n" + "é" * 50 + "\n").encode("latin-1"))
    with pytest.raises(InputError) as e:
        list(corpus.records(f, 40, encoding="latin-1"))
    assert str(e.value) == "long.txt:2: a line over 40 characters (raise it with --max-line-chars)"
    assert [t for _, _, t in corpus.records(f, 50, encoding="latin-1")] == ["short line", "é" * 50]
    g = tmp_path / "odd.txt"
    g.write_bytes("fine\n".encode("utf-16-le") + b"\x00\xd8" + "x\n".encode("utf-16-le"))  # a lone surrogate
    with pytest.raises(InputError) as e:
        list(corpus.records(g, encoding="utf-16-le"))
    assert str(e.value).startswith("odd.txt:2: not utf-16-le") and "--encoding" in str(e.value)
