"""One plan path: the published numbers are unchanged by the refactor, a run is planned once,
papers are studies executed by the same path, and invalid options cannot exist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import stimkit
from stimkit.views import table4
from stimkit import errors
from stimkit.catalog import definitions as catalog
from stimkit.run import plan as run_plan
from stimkit.run.options import Options, WefatOptions
from stimkit.study import study as studies

RECORDED = json.loads((Path(__file__).parent / "data" / "glove_catalog_v030.json").read_text())


@pytest.fixture
def store_path(catalog_db, tmp_path):
    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    return path


# GloVe's fingerprint in v0.3.0 (its file's size, mtime and head). Fingerprints now hash the
# whole file (issues 22, 23); a sampled p's stream derives from the fingerprint (seeding.rng_for),
# so the comparison runs GloVe under its old identity: then every number must be the same bit.
V030_GLOVE = "d1a62e618f83673b"


@pytest.fixture
def v030_glove(monkeypatch):
    from stimkit.encoders.wordvectors import WordVectorEncoder

    real = WordVectorEncoder.fingerprint
    monkeypatch.setattr(WordVectorEncoder, "fingerprint", property(
        lambda self: V030_GLOVE if self.spec == "glove-6b-50d" else real.fget(self)))


def test_the_catalog_on_glove_is_bit_identical_to_v030(store_path, v030_glove):
    """Every catalog test on GloVe (seed 0, budget 100,000): d, p, the statistic and the sizes
    equal, to the last bit, the values v0.3.0 stored (tests/data, recorded before the refactor)."""
    with stimkit.open(store_path) as s:
        report = s.test(everything=True, encoders=["glove-6b-50d"])
    assert not report.failures
    got = {r.test: r for r in report.results}
    assert len(got) == len(RECORDED["rows"]) == 88
    for want in RECORDED["rows"]:
        r = got[want["test"]]
        assert (r.effect_size, r.p_value, r.statistic, r.p_method, r.context, r.n_x, r.n_y) == (
            want["effect_size"], want["p_value"], want["statistic"], want["p_method"], want["context"],
            want["n_x"], want["n_y"]), want["test"]


def test_a_run_selects_each_test_s_sets_once(store_path, monkeypatch):
    """Planning fetches a test's four sets once; encoding and execution read the plan."""
    calls = []
    real = run_plan.fetch_sets
    monkeypatch.setattr(run_plan, "fetch_sets", lambda con, t: calls.append(t.name) or real(con, t))
    with stimkit.open(store_path) as s:
        report = s.test(["weat1", "sent-weat1", "weat6"], encoders=["glove-6b-50d", "glove-6b-50d,pooling=token"],
                        budget=1000)
    assert len(report.results) == 6 and not report.failures
    assert sorted(calls) == ["sent-weat1", "weat1", "weat6"]


def test_c_word_token_spans_are_checked_once_per_encoder_and_test(store_path, monkeypatch):
    from stimkit.run import cword

    checked = []
    real = cword.check_token_spans
    monkeypatch.setattr(cword, "check_token_spans", lambda enc, frame, name: checked.append(name) or real(enc, frame, name))
    with stimkit.open(store_path) as s:
        report = s.test(["sent-weat1"], encoders=["minilm"], context="c-word", budget=1000)
    assert [r.context for r in report.results] == ["c-word"] and report.results[0].encoder == "minilm,pooling=mean"
    assert checked == ["sent-weat1"] * 4  # its four sets, once


def test_a_plan_is_data_that_says_what_it_will_do_and_refuse(store_path):
    with stimkit.open(store_path) as s:
        tests = [catalog.get(s.con, "weat1"), catalog.TestDef("empty", ("nosuch@word", "flowers@word", "pleasant@word",
                                                                          "unpleasant@word"), "word")]
        p = run_plan.make(s.con, tests, ["glove-6b-50d", "nosuch"], Options(budget=100))
    assert [(t.name, e.spec) for t, e in p.pairs] == [("weat1", "glove-6b-50d")]
    assert {(f.test, f.encoder) for f in p.refused} == {("*", "nosuch"), ("empty", "*")}
    assert "no set named 'nosuch@word'" in next(f.cause for f in p.refused if f.test == "empty")
    (enc, stimuli), = p.encodings
    assert enc.spec == "glove-6b-50d" and stimuli.height == sum(f.height for f in p.tests[0].sets.values())


@pytest.mark.parametrize("values, message", [
    ({"method": "magic"}, "unknown p-value method"),
    ({"alpha": 1.5}, "--alpha must be between 0 and 1"),
    ({"clustered": True, "method": "parametric"}, "no parametric form"),
    ({"bootstrap": -1}, "--bootstrap must be 0"),
    ({"cuts": 0}, "--cuts must be at least 1"),
    ({"cuts": 100_000_000}, "over the limit"),
    ({"seed": -1}, "--seed must be between"),
    ({"balance": "trim"}, "unknown balance policy"),
])
def test_an_invalid_options_object_cannot_exist(values, message):
    with pytest.raises(errors.UsageError, match=message):
        Options(**values)


def test_wefat_options_are_checked_when_made():
    with pytest.raises(errors.UsageError, match="--bootstrap must be 0"):
        WefatOptions(bootstrap=-1)
    with pytest.raises(errors.UsageError, match="per-word p-value method"):
        WefatOptions(method="parametric")


def test_errors_carry_their_exit_codes():
    assert [e.exit_code for e in (errors.UsageError(), errors.InputError(), errors.StoreError(), errors.Interrupted())] \
        == [2, 1, 3, 130]
    from stimkit.stats import InvalidInput
    assert issubclass(InvalidInput, errors.InputError) and not issubclass(InvalidInput, ValueError)


def test_the_papers_are_study_files():
    may, tc = studies.load("may-2019"), studies.load("tan-celis-2019")
    assert may.paper == "may-2019" and may.layout == "table4" and may.correction == "holm" and may.wefat == ("*",)
    assert may.encoders == ("glove-6b-50d", "minilm", "minilm,pooling=cls", "use-m3")
    assert tc.layout == "tan-celis" and tc.contexts == ("own", "c-word") and len(tc.tests) == 64 and len(tc.rows) == 30
    assert set(tc.tests) <= set(catalog.load_toml())


@pytest.mark.parametrize("body, message", [
    ({"name": "s", "tests": ["weat1"], "colour": "red"}, "unknown key 'colour'"),
    ({"name": "s"}, "say which tests"),
    ({"name": "s", "tests": ["weat1"], "contexts": ["token"]}, "`contexts` must be own, c-word or a list of them"),
    ({"name": "s", "tests": ["weat1"], "table": {"layout": "wide"}}, "`table.layout`: input should be 'table4' or 'tan-celis'"),
    ({"name": "s", "tests": ["weat1"], "table": {"layout": "tan-celis"}}, "needs `rows`"),
])
def test_a_bad_study_is_one_usage_error(body, message):
    with pytest.raises(errors.UsageError, match=message):
        studies.parse(body)


def test_run_executes_a_study_through_the_plan_path(store_path):
    """A small study runs as the papers do: its tests on its encoders in one run, its table."""
    study = studies.parse({"name": "mini", "tests": ["weat1", "weat2"], "encoders": ["glove-6b-50d"],
                           "options": {"budget": 2000}, "correction": "bonferroni", "alpha": 0.05})
    with stimkit.open(store_path) as s:
        job = s.run(study)
        lib = s.test(["weat1", "weat2"], encoders=["glove-6b-50d"], budget=2000, alpha=0.05)
    view = table4.table4(job.results, job.family.alpha, job.tests)  # the views layer renders the run's table
    assert job.family.m == 2 and view.columns == ["test", "glove-6b-50d"]
    assert [row["test"] for row in view.rows] == ["weat1", "weat2"]
    assert [(r.test, r.effect_size, r.p_value) for r in job.run.results] == \
        [(r.test, r.effect_size, r.p_value) for r in lib.results]
    # Bonferroni: adjusted p = min(1, m p)
    assert job.results.sort("test")["p_adjusted"].to_list() == \
        [min(1.0, 2 * r.p_value) for r in sorted(job.run.results, key=lambda r: r.test)]
