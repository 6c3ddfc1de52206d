"""Inputs change, numbers follow (issue 48): a study's files are the one source of truth.

A study of another domain, written by hand with real files (city vs village words against
modern vs traditional traits), is edited the ways a researcher edits one: a word removed or
added, A and B swapped, a template line changed, the seed and the budget changed. After each
`run`, every result and baseline the study's views show equals what a fresh store built from
the final files gives (d and p to 1e-12, the baselines' percentile and fpr exactly); `status`
lists exactly what the run then makes; a run with nothing changed computes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import stimkit
from stimkit.study import study as studies

CITY = ["city", "downtown", "subway", "skyscraper", "apartment", "traffic"]
VILLAGE = ["village", "farm", "barn", "meadow", "cottage", "orchard"]
MODERN = ["modern", "fast", "digital", "busy", "new", "urban"]
TRADITIONAL = ["traditional", "slow", "quiet", "old", "rural", "simple"]

TEMPLATES = {
    "count_noun.j2": "This is {{ singular|a }}.\nThat is {{ singular|a }}.\nHere is {{ singular|a }}.\n",
    "adjective.j2": "It is {{ word }}.\nThat is {{ word }}.\nThis is {{ word }}.\n",
}


def _list(name: str, kind: str, words: list[str]) -> str:
    quoted = ", ".join(f'"{w}"' for w in words)
    return f'[{name}]\ncategory = "{name.title()}"\ndescription = "{name}"\nsource = "test"\nkind = "{kind}"\nwords = [{quoted}]\n\n'


def write_study(root: Path, lists: dict, swap: bool = False, seed: int = 0, budget: int = 2000,
                template_edit: str | None = None, baseline: int = 20) -> Path:
    """The study's files as a researcher writes them (rewritten whole at each edit)."""
    (root / "wordlists").mkdir(parents=True, exist_ok=True)
    (root / "templates" / "plain").mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "wordlists" / "places.toml").write_text(
        _list("city", "count_noun", lists["city"]) + _list("village", "count_noun", lists["village"])
        + _list("modern", "adjective", lists["modern"]) + _list("traditional", "adjective", lists["traditional"]))
    for name, text in TEMPLATES.items():
        if template_edit and name == "count_noun.j2":
            text = text.replace("Here is", template_edit)
        (root / "templates" / "plain" / name).write_text(text)
    a, b = ("traditional", "modern") if swap else ("modern", "traditional")
    (root / "tests" / "places.toml").write_text(
        f'["city-modern"]\nsets = ["city@word", "village@word", "{a}@word", "{b}@word"]\n\n'
        f'["city-modern-sent"]\nsets = ["city@plain", "village@plain", "{a}@plain", "{b}@plain"]\ncontext = "sentence"\n')
    (root / "study.toml").write_text(
        'name = "places"\ntests = ["city-*"]\nencoders = ["glove-6b-50d"]\ncorrection = "holm"\nalpha = 0.05\n'
        'wordlists = "wordlists"\ntemplates = "templates"\ncatalog = "tests"\n\n'
        f'[options]\nbudget = {budget}\nseed = {seed}\n\n[baseline]\nsets = {baseline}\n')
    return root / "study.toml"


def family(store, study_file: Path) -> dict:
    """What the study's views show: (test, encoder) -> d, p, percentile, fpr, n."""
    df = store.results(study=studies.load(study_file))
    return {(r["test"], r["encoder"]): (r["effect_size"], r["p_value"], r["baseline_percentile"], r["baseline_fpr"],
                                        (r["n_x"], r["n_y"], r["n_a"], r["n_b"]))
            for r in df.iter_rows(named=True)}


def fresh(tmp: Path, study_file: Path) -> dict:
    """A new store built from the study's files as they are now."""
    copy = tmp / f"fresh-{len(list(tmp.iterdir()))}"
    shutil.copytree(study_file.parent, copy, ignore=shutil.ignore_patterns("*.duckdb*"))
    with stimkit.open(copy / "f.duckdb") as store:
        store.run(copy / "study.toml")
        return family(store, copy / "study.toml")


def same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key in want:
        d, p, pct, fpr, n = got[key]
        d0, p0, pct0, fpr0, n0 = want[key]
        assert d == pytest.approx(d0, abs=1e-12), key
        assert p == pytest.approx(p0, abs=1e-12), key
        assert (pct, fpr, n) == (pct0, fpr0, n0), key


def todo(store, study_file: Path) -> set[tuple]:
    return {(r.kind, r.name, r.encoder) for r in store.status(study_file) if r.state != "current"}


BASE = {"city": CITY, "village": VILLAGE, "modern": MODERN, "traditional": TRADITIONAL}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The study run once; each test edits a copy of its folder and store."""
    root = tmp_path_factory.mktemp("places")
    study_file = write_study(root / "study", BASE)
    with stimkit.open(root / "study" / "stimkit.duckdb") as store:
        store.run(study_file)
    return root / "study"


@pytest.fixture
def study(built, tmp_path):
    copy = tmp_path / "study"
    shutil.copytree(built, copy)
    return copy


def edit_and_run(study: Path, tmp_path: Path, **edit):
    """Rewrite the files, check status names what the run then makes, run, compare to a fresh store."""
    lists = edit.pop("lists", BASE)
    study_file = write_study(study, lists, **edit)
    with stimkit.open(study / "stimkit.duckdb") as store:
        before = todo(store, study_file)
        job = store.run(study_file)
        made = {("result", r.test, r.encoder) for r in job.run.results}
        assert {t for t in before if t[0] == "result"} == made  # status listed exactly what the run computed
        assert todo(store, study_file) == set()
        got = family(store, study_file)
    same(got, fresh(tmp_path, study_file))
    return before, got


def test_a_run_with_nothing_changed_computes_nothing(study):
    study_file = study / "study.toml"
    with stimkit.open(study / "stimkit.duckdb") as store:
        assert todo(store, study_file) == set()
        runs = store.con.execute("SELECT count(*) FROM results").fetchone()[0]
        job = store.run(study_file)
        assert job.run.computed is False and job.run.results == [] and len(job.run.reused_results) == 2
        assert store.con.execute("SELECT count(*) FROM results").fetchone()[0] == runs
        assert job.results.height == 2  # the study's table still shows its family


def test_removing_a_word_changes_n_and_d_everywhere(study, tmp_path):
    old = {k: v for k, v in family(stimkit.open(study / "stimkit.duckdb"), study / "study.toml").items()}
    lists = {**BASE, "modern": MODERN[:-1]}
    before, got = edit_and_run(study, tmp_path, lists=lists)
    assert ("set", "modern@word", None) in before and ("set", "modern@plain", None) in before
    assert ("set", "city@word", None) not in before
    assert got[("city-modern", "glove-6b-50d")][4] == (6, 6, 5, 6)
    assert got[("city-modern-sent", "glove-6b-50d")][4] == (18, 18, 15, 18)
    assert got[("city-modern", "glove-6b-50d")][0] != old[("city-modern", "glove-6b-50d")][0]


def test_adding_a_word(study, tmp_path):
    _, got = edit_and_run(study, tmp_path, lists={**BASE, "traditional": TRADITIONAL + ["calm"]})
    assert got[("city-modern", "glove-6b-50d")][4] == (6, 6, 6, 7)


def test_swapping_a_and_b_recomputes_the_baselines(study, tmp_path):
    with stimkit.open(study / "stimkit.duckdb") as store:
        old = family(store, study / "study.toml")
    before, got = edit_and_run(study, tmp_path, swap=True)
    assert not any(t[0] == "set" for t in before)  # the sets are the same; their roles are not
    assert {t for t in before if t[0] == "baseline"} == {("baseline", "city-modern", "glove-6b-50d"),
                                                         ("baseline", "city-modern-sent", "glove-6b-50d")}
    for key, (d, _, pct, _, _) in got.items():
        assert d == pytest.approx(-old[key][0], abs=1e-12)   # the sign turns
        assert pct == pytest.approx(100 - old[key][2])       # and the baseline with it (no ties here)


def test_editing_a_template_line_regenerates_the_sentence_sets(study, tmp_path):
    before, got = edit_and_run(study, tmp_path, template_edit="There is")
    sets = {t[1] for t in before if t[0] == "set"}
    assert sets == {"city@plain", "village@plain"}  # the count nouns' file only; word sets untouched
    assert {t[1] for t in before if t[0] == "result"} == {"city-modern-sent"}


@pytest.mark.parametrize("edit", [{"seed": 7}, {"budget": 100}])
def test_changing_the_procedure_reruns_the_results(study, tmp_path, edit):
    before, _ = edit_and_run(study, tmp_path, **edit)
    assert {t[0] for t in before} >= {"result"} and not any(t[0] == "set" for t in before)


def test_exploratory_results_stay_out_of_the_study_family(study):
    study_file = study / "study.toml"
    with stimkit.open(study / "stimkit.duckdb") as store:
        m = store.results(study=studies.load(study_file)).family.m
        store.test(x="city@word", y="village@word", a="traditional@word", b="modern@word", name="explore",
                   encoders=["glove-6b-50d"], budget=500)
        fam = store.results(study=studies.load(study_file)).family
        assert (fam.m, fam.outside) == (m, 1)
        assert store.results(study=studies.load(study_file), whole_store=True).family.m == m + 1
        run = store.con.execute("SELECT study, alpha, correction FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        assert run == (None, 0.01, "holm")  # a test run records the reading it was made under


# ---------------------------------------------------------------- random edits (hypothesis)

EDITS = st.sampled_from(["drop", "add", "rename", "template", "swap", "seed", "budget"])


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(EDITS, min_size=1, max_size=2), st.randoms(use_true_random=False))
def test_random_edits_follow_the_files(built, tmp_path_factory, edits, rnd):
    tmp = tmp_path_factory.mktemp("edits")
    study = tmp / "study"
    shutil.copytree(built, study)
    state = {"lists": {k: list(v) for k, v in BASE.items()}, "swap": False, "seed": 0, "budget": 2000,
             "template_edit": None}
    for edit in edits:
        name = rnd.choice(sorted(state["lists"]))
        words = state["lists"][name]
        if edit == "drop" and len(words) > 3:
            words.pop(rnd.randrange(len(words)))
        elif edit == "add":
            words.append(rnd.choice(["calm", "green", "loud", "river", "market", "field"]))
            state["lists"][name] = list(dict.fromkeys(words))
        elif edit == "rename":
            words[rnd.randrange(len(words))] = rnd.choice(["harbor", "bridge", "garden", "hill"])
            state["lists"][name] = list(dict.fromkeys(words))
        elif edit == "template":
            state["template_edit"] = rnd.choice(["There is", "Look at", "We saw"])
        elif edit == "swap":
            state["swap"] = not state["swap"]
        elif edit == "seed":
            state["seed"] = rnd.randrange(1, 100)
        elif edit == "budget":
            state["budget"] = rnd.choice([100, 500, 3000])
        edit_and_run(study, tmp, lists=state["lists"], swap=state["swap"], seed=state["seed"],
                     budget=state["budget"], template_edit=state["template_edit"])


# ---------------------------------------------------------------- the CLI: status, replay

def cli(args, cwd):
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("STIMKIT_DB", None)
    return subprocess.run([sys.executable, "-m", "stimkit", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_status_and_replay_of_recorded_commands(study):
    """`status` from the study's folder; each command kind's recorded command (run, test,
    baseline, an audit, a debias comparison), replayed there, gives the same result (the record
    names what was typed: `run`, never `run places (run)`)."""
    out = cli(["status", "--format", "csv"], study)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "kind,name,encoder,state,detail,command" and "everything is current" in out.stderr
    # a word added (and, to keep the replays cheap, a smaller budget and baseline)
    write_study(study, {**BASE, "city": CITY + ["tram"]}, budget=200, baseline=4)
    out = cli(["status", "--format", "csv"], study)
    assert "set,city@word,,outdated" in out.stdout and "result,city-modern,glove-6b-50d,outdated" in out.stdout
    for args in (["run"], ["test", "city-modern", "-e", "glove-6b-50d", "--budget", "100"],
                 ["baseline", "city-modern", "-e", "glove-6b-50d", "--sets", "3"],
                 ["audit", "templates", "-t", "city-modern-sent", "-e", "glove-6b-50d", "--budget", "100"],
                 ["debias", "compare", "city-modern", "-e", "glove-6b-50d,debias=hard", "--budget", "100"]):
        first = cli(args, study)
        assert first.returncode == 0, first.stderr
        con = stimkit.open(study / "stimkit.duckdb", read_only=True).con
        command, run_id = con.execute("SELECT command, run_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        con.close()
        assert command.split()[0] == args[0]
        again = cli(command.split(), study)
        assert again.returncode == 0, again.stderr
        con = stimkit.open(study / "stimkit.duckdb", read_only=True).con
        if args[0] == "baseline":  # stored once, reused by its id
            rows = con.execute("SELECT count(*), count(DISTINCT baseline_id) FROM baselines WHERE k = 3").fetchone()
            assert rows == (1, 1)
        elif args[0] in ("test", "audit", "debias"):  # the same rows, run for run
            first, second = (con.execute("SELECT test, encoder, kind, context, effect_size, p_value FROM results "
                                         "WHERE run_id = ? ORDER BY ALL", [r]).fetchall()
                             for r in [run_id] + [r for (r,) in con.execute(
                                 "SELECT run_id FROM runs WHERE command = ? AND run_id <> ?", [command, run_id]).fetchall()])
            assert first and first == second
        else:  # the study's run: nothing changed, nothing computed
            assert "nothing changed" in again.stderr
        con.close()


def test_a_reading_says_when_the_files_moved_on(study):
    """Before `run`, the study's views still show the results of the older files: they say so."""
    study_file = write_study(study, {**BASE, "city": CITY[:-1]})
    with stimkit.open(study / "stimkit.duckdb", read_only=True) as store:
        fam = store.results(study=studies.load(study_file)).family
        assert sorted(fam.drift) == ["city@plain", "city@word"]
        assert fam.drift_note.startswith("warning: the study's files changed") and "`stimkit run`" in fam.drift_note
        assert store.check(study=studies.load(study_file)).family.drift == fam.drift
    with stimkit.open(study / "stimkit.duckdb") as store:
        store.run(study_file)
        assert store.results(study=studies.load(study_file)).family.drift == ()


def test_corpus_sets_are_versioned_by_their_import():
    """A corpus set (`<list>@corpus:<name>`) is not rendered from files: its key is its import."""
    from stimkit.catalog import corpus
    from stimkit.stimuli import keys
    from stimkit.stimuli.sets import SetSpec

    assert corpus.PREFIX in keys.IMPORTED
    lists = {"city": object()}
    assert keys.renderable([SetSpec("city", f"{corpus.PREFIX}news"), SetSpec("city", "plain")], lists) == \
        [SetSpec("city", "plain")]


@pytest.mark.parametrize("where", ["run.execute.execute", "run.baseline.execute_one"])
def test_a_study_run_that_fails_part_way_leaves_the_store_as_it_was(tmp_path, monkeypatch, where):
    """`run` generates and encodes before it stores its results: a failure (a full disk as its
    results or baselines are stored) takes its sets and vectors back out (store.journal)."""
    import importlib

    from conftest import snapshot
    from stimkit import store

    study_file = write_study(tmp_path / "study", BASE)
    path = tmp_path / "s.duckdb"
    store.connect(path).close()
    con = store.connect(path)
    before = snapshot(con)
    con.close()
    module, name = where.rsplit(".", 1)

    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(importlib.import_module(f"stimkit.{module}"), name, full)
    if name == "execute":  # api imports it by name inside _execute
        monkeypatch.setattr("stimkit.run.execute.execute", full)
    with stimkit.open(path) as s, pytest.raises(OSError):
        s.run(study_file)
    con = store.connect(path, read_only=True)
    assert snapshot(con) == before
    con.close()


def test_status_names_a_ceat_result_or_wording_audit_whose_sets_changed(tmp_path):
    """A CEAT row and a wording audit record the versions that played X, Y, A and B; once a list
    changes, `status` names each out of date with the command that redoes it."""
    from stimkit.stimuli.sets import role_versions

    study_file = write_study(tmp_path / "study", BASE)
    with stimkit.open(tmp_path / "study" / "stimkit.duckdb") as store:
        store.run(study_file)
        con = store.con
        rv = con.execute("SELECT role_versions FROM results WHERE test = 'city-modern'").fetchone()[0]
        con.execute("INSERT INTO ceat_results (ceat_id, run_id, test, encoder, fingerprint, context, n_samples, seed, "
                    "contexts_min, contexts_max, single_context_words, role_versions) SELECT 'c1', run_id, test, encoder, "
                    "fingerprint, context, 10, 0, 1, 1, 0, role_versions FROM results WHERE test = 'city-modern'")
        assert rv.startswith("X:") and rv.count("|") == 3 and role_versions  # X, Y, A, B in order
        # a wording audit records the versions its original read, as CEAT does
        root = tmp_path / "study"
        with stimkit.open(root / "stimkit.duckdb", catalog_dir=root / "tests", wordlist_dir=root / "wordlists",
                          template_dir=root / "templates") as own:  # the study's folders, as its CLI has them
            store.close()
            own.audit_perturb(["city-modern-sent"], ["glove-6b-50d"], rules=["tense-past"], budget=500)
        con = store.con
        assert con.execute("SELECT role_versions FROM wording_audits").fetchall() == con.execute(
            "SELECT role_versions FROM results WHERE test = 'city-modern-sent' AND kind = 'test'").fetchall()
        rows = {(r.kind, r.name): r for r in store.status(study_file)}
        assert rows[("ceat", "city-modern")].state == "current"
        assert rows[("wording", "city-modern-sent")].state == "current"
    write_study(tmp_path / "study", {**BASE, "village": VILLAGE[:-1]})
    with stimkit.open(tmp_path / "study" / "stimkit.duckdb", read_only=True) as store:
        rows = {(r.kind, r.name): r for r in store.status(study_file)}
        assert (rows[("ceat", "city-modern")].state, rows[("ceat", "city-modern")].command) == \
            ("outdated", "stimkit audit ceat -t city-modern")
        assert (rows[("wording", "city-modern-sent")].state, rows[("wording", "city-modern-sent")].command) == \
            ("outdated", "stimkit audit perturb -t city-modern-sent")


def test_a_set_key_covers_what_its_templates_reach_in_turn(tmp_path):
    """A template that includes a file of another set, which includes a third: editing the third
    changes the key (the version, which hashes what renders, changes with it)."""
    from stimkit.stimuli import keys
    from stimkit.stimuli.templates import TemplateSet

    (tmp_path / "s").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "s" / "count_noun.j2").write_text('{% include "lib/_a.j2" %}\n')
    (tmp_path / "lib" / "_a.j2").write_text('{% include "lib/_b.j2" %}')
    (tmp_path / "lib" / "_b.j2").write_text("This is {{ singular|a }}.")
    before = keys._templates_digest(TemplateSet("s", tmp_path), {"count_noun"})
    (tmp_path / "lib" / "_b.j2").write_text("That is {{ singular|a }}.")
    assert keys._templates_digest(TemplateSet("s", tmp_path), {"count_noun"}) != before


def test_status_and_generate_honour_the_studys_override(tmp_path):
    """A study whose list replaces a built-in one (`override = true`) reads the same folders in
    `status`, `generate` and its readings as in `run`."""
    study_file = write_study(tmp_path / "study", BASE)
    lists = tmp_path / "study" / "wordlists" / "places.toml"
    lists.write_text(lists.read_text() + _list("flowers", "count_noun", ["tulip", "daisy"]))
    study_file.write_text("override = true\n" + study_file.read_text())
    with stimkit.open(tmp_path / "study" / "stimkit.duckdb") as store:
        store.run(study_file)
        assert todo(store, study_file) == set()
        assert all(r["status"] == "unchanged" for r in store.generate_study(study_file))
        assert store.results(study=studies.load(study_file)).family.drift == ()
