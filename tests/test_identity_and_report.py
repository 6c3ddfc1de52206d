"""Model identity across spellings, and the report counting what `check` counts (issue 23)."""

from __future__ import annotations

import re

import pytest

import stimkit
from stimkit.encoders.transformer import minilm_path


@pytest.fixture
def store(catalog_store):
    return catalog_store  # conftest: a Store on a private copy of the catalog store


def test_minilm_and_its_folder_are_one_encoder_and_one_hypothesis(store):
    (a,) = store.test(["weat6"], encoders=["minilm"], budget=500).results
    n_vectors = store.query("SELECT count(*) AS n FROM embeddings_384")["n"][0]
    (b,) = store.test(["weat6"], encoders=[f"hf:{minilm_path()}"], budget=500).results
    assert b.fingerprint == a.fingerprint and b.effect_size == a.effect_size
    assert store.query("SELECT count(*) AS n FROM embeddings_384")["n"][0] == n_vectors  # nothing encoded again
    assert store.results().family.m == 1  # the second run is a replicate of the same hypothesis


def test_a_display_name_heads_tables_and_never_changes_the_fingerprint(store):
    (plain,) = store.test(["weat6"], encoders=["glove-6b-50d"], budget=500).results
    (named,) = store.test(["weat6"], encoders=["GloVe=glove-6b-50d"], budget=500).results
    assert named.fingerprint == plain.fingerprint and named.display == "GloVe" and plain.display is None
    from stimkit.study import study as studies

    job = store.run(studies.parse({"name": "s", "tests": ["weat6"], "encoders": ["GloVe 50d=glove-6b-50d"],
                                               "options": {"budget": 500}}))
    from stimkit.views import table4

    assert table4.table4(job.results, job.family.alpha, job.tests).columns == ["test", "GloVe 50d"]


def _report_counts(store, tmp_path) -> tuple[int, int]:
    written = store.report(tmp_path / "report", formats=["html"])
    html = written.html.read_text()
    m = re.search(r"(\d+) comparisons: (\d+) violations?", html)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def test_the_report_counts_violations_as_check_does(store, tmp_path):
    pytest.importorskip("matplotlib")
    store.test(["weat6b", "sent-weat6b"], encoders=["glove-6b-50d"], budget=2000)
    none = store.check()
    assert (none["verdict"] == "violation").sum() == 0 and none.height >= 1
    assert _report_counts(store, tmp_path / "a") == (none.height, 0)
    # two word/sentence pairs whose d differ beyond their joint uncertainty on GloVe
    store.test(["weat+i1", "sent-weat+i1", "weat+i5", "sent-weat+i5"], encoders=["glove-6b-50d"], budget=2000)
    two = store.check()
    assert (two["verdict"] == "violation").sum() == 2
    assert _report_counts(store, tmp_path / "b") == (two.height, 2)
