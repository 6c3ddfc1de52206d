"""Render limits and input folders are explicit values a Store holds and passes down, never
module globals: two stores in one process keep their own, a call may override the store's,
and a study's run uses its folders without changing the store's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import stimkit
from stimkit import StimkitError
from stimkit.stimuli.folders import Folders
from stimkit.stimuli.limits import Limits

from test_slots import people

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "care-tech"
SENTENCE = "{{ word }} is a word in a sentence of some length."   # 42 characters and the word


def long_lines(tmp_path: Path) -> Path:
    (tmp_path / "tpl" / "long").mkdir(parents=True)
    (tmp_path / "tpl" / "long" / "default.j2").write_text(SENTENCE + "\n")
    return tmp_path / "tpl"


def test_two_stores_in_one_process_keep_their_own_limits(tmp_path):
    """One store with a 20-character cap refuses a sentence that a store beside it, opened with
    the defaults, writes; the refusal holds before and after the other store's generate, and
    the other store's defaults hold before and after the refusal (the global stack made one
    process's limits everyone's)."""
    tpl = long_lines(tmp_path)
    small, default = Limits(sentence_chars=20), Limits()
    with stimkit.open(tmp_path / "a.duckdb", template_dir=tpl, limits=small) as a, \
            stimkit.open(tmp_path / "b.duckdb", template_dir=tpl) as b:
        assert a.limits == small and b.limits == default
        with pytest.raises(StimkitError, match=r"long/default:1: the sentence for word 'aster' is over 20 characters "
                                               r"\(raise it with `generate --max-sentence-chars` or STIMKIT_MAX_SENTENCE_CHARS\)"):
            a.generate(["flowers"], ["long"])
        made = b.generate(["flowers"], ["long"])
        with pytest.raises(StimkitError, match="over 20 characters"):
            a.generate(["flowers"], ["long"])
        assert b.generate(["flowers"], ["long"])[0]["status"] == "unchanged"
        assert a.sets().height == 0  # nothing half-written by the refusals
        (sentence,) = b.query("SELECT stimulus FROM current_stimuli WHERE word = 'rose'")["stimulus"]
        assert sentence == "rose is a word in a sentence of some length."
        assert [(r["name"], r["status"], r["n_stimuli"]) for r in made] == [("flowers@long", "new", 25)]
        assert a.limits == small and b.limits == default


def test_generate_limits_override_the_stores_for_that_call_only(tmp_path):
    tpl = long_lines(tmp_path)
    with stimkit.open(tmp_path / "s.duckdb", template_dir=tpl, limits=Limits(sentence_chars=20)) as s:
        with pytest.raises(StimkitError, match="over 20 characters"):
            s.generate(["flowers"], ["long"])
        report = s.generate(["flowers"], ["long"], limits=Limits(sentence_chars=200))
        assert [r["status"] for r in report] == ["new"] and report[0]["n_stimuli"] == 25  # 25 flowers, one line
        with pytest.raises(StimkitError, match="over 40 characters"):  # the call's, not the store's
            s.generate(["insects"], ["long"], limits=Limits(sentence_chars=40))
        with pytest.raises(StimkitError, match="over 20 characters"):  # the store's, as it was
            s.generate(["insects"], ["long"])
        assert s.limits == Limits(sentence_chars=20)


def test_a_multi_slot_set_renders_within_the_limits_of_its_call(tmp_path):
    """A multi-slot set's sentences are rendered as they are written, after its plan is made:
    the limits travel with the plan, not through a global read at write time."""
    wl, tpl = people(tmp_path)
    with stimkit.open(tmp_path / "s.duckdb", wordlist_dir=wl, template_dir=tpl, limits=Limits(per_set=5)) as s:
        with pytest.raises(StimkitError, match=r"set 'descriptor=\*@people': over 5 sentences .*--max-per-set"):
            s.generate(None, ["people"])
        with pytest.raises(StimkitError, match=r"set 'descriptor=\*@people': .* combinations of slot words .*over 3 "):
            s.generate(None, ["people"], limits=Limits(combinations=3))
        (made,) = s.generate(None, ["people"], limits=Limits())
        assert made["name"] == "descriptor=*@people" and made["n_stimuli"] > 5


def test_the_environment_sets_a_stores_default_limits_once(tmp_path, monkeypatch):
    monkeypatch.setenv("STIMKIT_MAX_SENTENCE_CHARS", "20")
    monkeypatch.setenv("STIMKIT_MAX_RENDER_SECONDS", "0.5")
    with stimkit.open(tmp_path / "s.duckdb", template_dir=long_lines(tmp_path)) as s:
        assert s.limits == Limits(sentence_chars=20, render_seconds=0.5)
        monkeypatch.setenv("STIMKIT_MAX_SENTENCE_CHARS", "2000")  # read once: the open store keeps its own
        with pytest.raises(StimkitError, match="over 20 characters"):
            s.generate(["flowers"], ["long"])
        with stimkit.open(tmp_path / "t.duckdb", limits=Limits(per_set=7)) as t:
            assert t.limits == Limits(per_set=7)  # given: the environment is not read


def test_an_import_checks_examples_against_the_stores_limits(tmp_path):
    import json

    folder = tmp_path / "in"
    folder.mkdir()
    examples = {k: {"category": k, "examples": [f"{k} example {i}, a sentence of words" for i in range(3)]}
                for k in ("targ1", "targ2", "attr1", "attr2")}
    (folder / "t.jsonl").write_text(json.dumps(examples))
    with stimkit.open(tmp_path / "a.duckdb", limits=Limits(sentence_chars=25)) as a, \
            stimkit.open(tmp_path / "b.duckdb") as b:
        with pytest.raises(StimkitError, match=r"t.jsonl: 'targ1' example 1 is 36 characters, over 25"):
            a.import_sentbias(folder)
        assert [r["test"] for r in b.import_sentbias(folder)] == ["import:t"]


def test_folders_are_one_frozen_value_and_using_replaces_only_what_is_given():
    base = Folders(Path("defs"), Path("lists"), None, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.wordlist_dir = Path("other")  # type: ignore[misc]
    assert base.using(template_dir=Path("tpl"), wordlist_dir=None) == Folders(Path("defs"), Path("lists"), Path("tpl"))
    assert base.using(wordlist_dir=Path("mine")).wordlist_dir == Path("mine")
    assert base.using(override=True).override and base.using(override=False) == base
    assert Folders(override=True).using(override=False).override  # either's --override holds


def test_a_studys_run_uses_its_folders_and_leaves_the_stores_as_they_were(tmp_path):
    """The example study names its own tests, lists and templates: a store opened without them
    runs it (its missing sets generated from the study's folders), and afterwards still knows
    none of them (no attribute was swapped and restored: the run was given its folders)."""
    with stimkit.open(tmp_path / "s.duckdb") as s:
        before = s.folders
        job = s.run(EXAMPLE / "study.toml", ["glove-6b-50d"], budget=500)
        assert sorted(job.tests) == ["care-tech-gender", "care-tech-gender-sent", "care-tech-warmth",
                                     "care-tech-warmth-sent"]
        assert len(job.run.results) == 4
        assert s.folders is before and s.folders == Folders()
        assert (s.catalog_dir, s.wordlist_dir, s.template_dir, s.override) == (None, None, None, False)
        with pytest.raises(StimkitError, match="unknown word list 'care_occupations'"):
            s.generate(["care_occupations"], ["workplace"])


def test_missing_sets_and_baselines_take_the_folders_they_are_given(tmp_path):
    with stimkit.open(tmp_path / "s.duckdb", limits=Limits(sentence_chars=300)) as s:
        own = s.folders.using(wordlist_dir=EXAMPLE / "wordlists", template_dir=EXAMPLE / "templates")
        assert s._generate_missing([stimkit_spec("care_occupations@workplace")]) == []  # the store's: unknown list
        (note,) = s._generate_missing([stimkit_spec("care_occupations@workplace")], own)
        assert note == "generated: 1 set: care_occupations@workplace"
        inputs = s._baseline_inputs(own)
        assert inputs.limits == Limits(sentence_chars=300)
        assert "care_occupations" in inputs.wordlists() and "care_occupations" not in s._baseline_inputs().wordlists()
        assert inputs.template_set("workplace").path.parent == EXAMPLE / "templates"


def stimkit_spec(name: str):
    from stimkit.stimuli.sets import SetSpec

    return SetSpec.parse(name)
