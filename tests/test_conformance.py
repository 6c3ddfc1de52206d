"""The catalog reproduces the 46 published SEAT stimulus sets (May et al. 2019)."""

import json
from collections import Counter

import pytest

from stimkit.catalog import definitions as catalog, sentbias
from stimkit.stimuli.balance import balance

from conftest import CUT_SETS, REFERENCE, published

PUBLISHED = sorted(p.stem for p in REFERENCE.glob("*.jsonl"))


def test_all_46_published_tests_are_in_the_catalog():
    assert len(PUBLISHED) == 46
    assert sorted(catalog.by_paper(catalog.load_toml(), "may-2019")) == PUBLISHED


def diff_message(name, key, ours, theirs):
    missing = [s for s in theirs if s not in set(ours)]
    extra = [s for s in ours if s not in set(theirs)]
    return f"{name} {key}: missing {missing[:10]} extra {extra[:10]} (sizes ours {len(ours)}, published {len(theirs)})"


@pytest.mark.parametrize("name", PUBLISHED)
def test_catalog_sets_match_published(catalog_con, name):
    ours = sentbias.test_json(catalog_con, catalog.get(catalog_con, name))
    theirs = published(name)
    for key in ("targ1", "targ2", "attr1", "attr2"):
        o, t = ours[key]["examples"], theirs[key]["examples"]
        assert ours[key]["category"] == theirs[key]["category"], (name, key)
        assert len(set(o)) == len(o), f"{name} {key}: duplicate stimuli"
        if (name, key) in CUT_SETS:
            assert set(t) < set(o), diff_message(name, key, o, t)
            assert len(t) < len(o)
        elif name.startswith("sent-"):
            assert Counter(o) == Counter(t), diff_message(name, key, o, t)
        else:  # word-level and unbleached sets: exactly, order included
            assert o == t, diff_message(name, key, o, t)


def test_cut_sets_are_cut_to_the_published_size(catalog_con):
    for name, key in CUT_SETS:
        test = catalog.get(catalog_con, name)
        sets = catalog.fetch_sets(catalog_con, test)
        b = balance(sets["x"], sets["y"], "cut", seed=1, test_name=name)
        assert b.x.height == b.y.height == len(published(name)[key]["examples"])


def test_export_equals_published(catalog_con, tmp_path):
    written = sentbias.export(catalog_con, tmp_path / "out", PUBLISHED)
    assert len(written) == 46
    for path in written:
        theirs = published(path.stem)
        ours = json.loads(path.read_text())
        for key in theirs:
            if (path.stem, key) in CUT_SETS:
                assert set(theirs[key]["examples"]) < set(ours[key]["examples"])
            elif path.stem.startswith("sent-"):
                assert sorted(ours[key]["examples"]) == sorted(theirs[key]["examples"])
            else:
                assert ours[key] == theirs[key]
        if not path.stem.startswith("sent-"):  # same bytes as the published file
            assert path.read_text() == (REFERENCE / path.name).read_text().rstrip("\n")
