"""A German, a Russian and a Turkish corpus (tests/fixtures/corpora/SOURCE.md) imported with
their own word lists: each word's count equals a plain Python count of the sentences holding
it as a word (Python's own \\w+ tokens, lower-cased), word for word, and every stored context
shows the word at its span. docs/methods/contexts.md shows the same figures."""

import collections
import re

import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.cli import app

from conftest import FIXTURES

CORPORA = FIXTURES / "corpora"
LISTS = {"de": ("familie_de", "beruf_de"), "ru": ("family_ru", "career_ru"), "tr": ("family_tr", "career_tr")}


def plain_count(text: str, words: list[str]) -> dict[str, int]:
    """Sentences holding each word: split after . ! ?, Python's \\w+ tokens, lower case (the
    Turkish capital İ as i, as stimkit folds it)."""
    counts = collections.Counter()
    for line in text.splitlines():
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            tokens = set(re.findall(r"\w+", sentence.replace("İ", "i").lower()))
            counts.update(w for w in words if w.lower() in tokens)
    return dict(counts)


@pytest.mark.parametrize("language", sorted(LISTS))
def test_each_language_is_found_word_for_word(tmp_path, language):
    folder = CORPORA / language
    names = LISTS[language]
    args = ["--db", str(tmp_path / "s.duckdb"), "import", "corpus", str(folder / "corpus.txt"), "--name", language,
            "--wordlist-dir", str(folder), "-n", "5"]
    for n in names:
        args += ["-w", n]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    con = store.connect(tmp_path / "s.duckdb", read_only=True)
    text = (folder / "corpus.txt").read_text(encoding="utf-8")
    for name in names:
        words = [w for (w,) in store.rows(con, "SELECT word FROM corpus_words w JOIN current_sets s ON "
                                               "s.version = w.set_version WHERE s.name = ?", [f"{name}@corpus:{language}"])]
        found = dict(store.rows(con, "SELECT w.word, w.found FROM corpus_words w JOIN current_sets s ON "
                                     "s.version = w.set_version WHERE s.name = ? AND w.found > 0",
                                [f"{name}@corpus:{language}"]))
        assert len(words) == 6
        assert found == plain_count(text, words) and len(found) == 6    # every word of the list occurs
    spans = store.rows(con, "SELECT word, substr(stimulus, span_start + 1, span_end - span_start) FROM current_stimuli")
    assert spans and all(w.lower() == s.replace("İ", "i").lower() for w, s in spans)
    con.close()


def test_the_fixtures_hold_what_a_plain_matcher_gets_wrong():
    """Inflected and compound forms that are other words are there, and are not counted."""
    de = (CORPORA / "de" / "corpus.txt").read_text(encoding="utf-8")
    assert "Familienfest" in de and "Familien " in de and plain_count(de, ["Familie"]) == {"Familie": 3}
    tr = (CORPORA / "tr" / "corpus.txt").read_text(encoding="utf-8")
    assert tr.count("İş") == 2 and plain_count(tr, ["iş"]) == {"iş": 2}   # "İş sabah", "baba, iş"; not İşletme
