"""Tan & Celis 2019: the 42 stimulus files, c-word as a context, the Tables 7/8 layout."""

import json
from collections import Counter
from pathlib import Path

import pytest

from stimkit import StimkitError, catalog, sentbias, wordlists

from conftest import REPO

TC_REFERENCE = REPO.parent / "shared" / "reference" / "tan-celis" / "tests"
TC_FILES = sorted(p.stem for p in TC_REFERENCE.glob("*.jsonl"))
KEYS = ("targ1", "targ2", "attr1", "attr2")
# Targets the authors cut at random to equal size (as May et al.'s sent-weat8 Arts, 56 of 76).
TC_CUT = {("sent-weat+13", "targ2")}


def reference(name: str) -> dict:
    return json.loads((TC_REFERENCE / f"{name}.jsonl").read_text())


def test_the_42_files_are_the_tan_celis_catalog():
    assert len(TC_FILES) == 42
    tc = catalog.by_paper(catalog.load_toml(), "tan-celis-2019")
    assert sorted(tc) == TC_FILES
    assert len(catalog.by_paper(catalog.load_toml(), "may-2019")) == 46
    assert {t.family for t in tc.values()} >= {"+C11", "+C12", "+C13", "+Occ", "+I1", "+I5",
                                               "+Double Bind EA/AA (Competent)", "Double Bind M/F (Likable)"}


def test_unknown_paper_is_refused():
    with pytest.raises(StimkitError, match="unknown paper 'tan-celis'.*may-2019, tan-celis-2019"):
        catalog.by_paper(catalog.load_toml(), "tan-celis")


def test_export_reproduces_every_tan_celis_file(catalog_con, tmp_path):
    written = sentbias.export(catalog_con, tmp_path, TC_FILES)
    assert sorted(p.stem for p in written) == TC_FILES
    for path in written:
        ours, theirs = json.loads(path.read_text()), reference(path.stem)
        for key in KEYS:
            o, t = ours[key]["examples"], theirs[key]["examples"]
            assert ours[key]["category"] == theirs[key]["category"], (path.stem, key)
            if (path.stem, key) in TC_CUT:
                assert Counter(t) < Counter(o) and len(t) < len(o), (path.stem, key)
            else:
                assert Counter(o) == Counter(t), (path.stem, key, sorted(Counter(o) - Counter(t))[:5],
                                                  sorted(Counter(t) - Counter(o))[:5])


def test_cut_target_is_cut_to_the_published_size(catalog_con):
    test = catalog.get(catalog_con, "sent-weat+13")
    sets = catalog.fetch_sets(catalog_con, test)
    b = catalog.balance(sets["x"], sets["y"], test.balance, seed=0, test_name=test.name)
    assert b.x.height == b.y.height == len(reference("sent-weat+13")["targ2"]["examples"]) == 56


def test_occupations_follow_the_split_lowercase_and_cut_rules():
    lists = wordlists.load_all()
    male = [w.text for w in lists["winobias_male_occupations"].words]
    female = [w.text for w in lists["winobias_female_occupations"].words]
    assert "construction" in male and "worker" in male and "construction worker" not in male
    assert "ceo" in male and "CEO" not in male and "cook" not in male
    assert len(male) == len(female) == 20
    winobias = (TC_REFERENCE.parent / "winobias" / "male_occupations.txt").read_text().split("\n")
    assert len([w for line in winobias for w in line.split()]) == 21  # split, before the cut


@pytest.mark.parametrize("body, message", [
    ('split = true\nwords = ["a b", {word = "c"}]', "plain string words"),
    ('drop = ["zebra"]\nwords = ["a", "b"]', "drop names 'zebra', which is not in the list"),
    ('drop = "a"\nwords = ["a", "b"]', "`drop` must be a list"),
])
def test_bad_derivation_rules_are_refused(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(f"[occ]\n{body}\n")
    with pytest.raises(StimkitError, match=message) as e:
        wordlists.parse_file(path)
    assert "bad.toml" in str(e.value) and "'occ'" in str(e.value)
