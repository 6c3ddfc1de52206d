"""Template audits: per-template tests, leave-one-out, word influence, template sets."""

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit import StimkitError, stats, store
from stimkit.encoders import embeddings
from stimkit.run import audit, plan
from stimkit.run.options import Options
from stimkit.stats import audit as audit_stats
from stimkit.catalog import definitions as catalog
from stimkit.stimuli import generate, wordlists
from stimkit.cli import app
from stimkit.encoders import resolve
from stimkit.stimuli.generate import SetSpec

from conftest import snapshot


@pytest.fixture(scope="module")
def glove():
    return resolve("glove-6b-50d")


def run_audit(con, test, enc, template_set="may2019", seed=0, budget=2_000, alpha=0.01):
    """One audit in a run of its own: the re-templated test planned, its vectors encoded and
    the audit stored in one transaction (a refused audit leaves the store as it was)."""
    opts = Options(budget=budget, seed=seed)
    t = catalog.get(con, test)
    planned = plan.make(con, [audit.retemplate(t, template_set)], [enc.spec], opts)
    if planned.refused:
        raise planned.refused[0].as_error()
    (pt,) = planned.tests
    with store.transaction(con):
        for e, stimuli in planned.encodings:
            embeddings.encode_missing(con, e, stimuli)
        run_id = store.start_run(con, "audit", seed)
        return audit.audit_one(con, run_id, t, template_set, pt, enc, pt.options, alpha)


def test_template_alone_equals_a_direct_computation(catalog_con, glove):
    a = run_audit(catalog_con, "sent-weat6", glove, budget=20_000)  # C(16, 8) = 12,870 <= budget: exact
    rows = store.frame(catalog_con, "SELECT * FROM audit_templates WHERE audit_id = ?", [a.audit_id])
    cell = rows.filter((pl.col("analysis") == "alone") & (pl.col("frame") == "The person's name is X.")).row(0, named=True)
    # by hand: encode the eight sentences per name list, score against the full attribute sets
    enc = lambda texts: glove.encode(texts, [None] * len(texts)).vectors  # noqa: E731
    male = [f"The person's name is {n}." for n in ("John", "Paul", "Mike", "Kevin", "Steve", "Greg", "Jeff", "Bill")]
    female = [f"The person's name is {n}." for n in ("Amy", "Joan", "Lisa", "Sarah", "Diana", "Kate", "Ann", "Donna")]
    t = catalog.get(catalog_con, "sent-weat6")
    A = enc(catalog.fetch(catalog_con, t.sql("a"))["stimulus"].to_list())
    B = enc(catalog.fetch(catalog_con, t.sql("b"))["stimulus"].to_list())
    s = stats.association(np.concatenate([enc(male), enc(female)]), A, B)
    assert cell["n_x"] == cell["n_y"] == 8
    assert cell["effect_size"] == pytest.approx(stats.effect_size(s[:8], s[8:]), abs=1e-9)
    assert cell["p_value"] == pytest.approx(stats.permutation_p(s, 8).p)  # C(16, 8): exact, no seed involved
    assert cell["template_ids"] == ["may2019/name:9"]
    assert cell["shift"] == pytest.approx(cell["effect_size"] - a.full_d)
    # leave-one-out has one row per template, and the flip shares are the means of the flags
    assert rows.filter(pl.col("analysis") == "left_out").height == a.n_templates == 8
    alone = rows.filter((pl.col("analysis") == "alone") & pl.col("effect_size").is_not_null())
    assert a.sign_flip_share == pytest.approx(alone["sign_flip"].mean())
    assert a.decision_flip_share == pytest.approx(alone["decision_flip"].mean())
    assert a.k_meta == 8 and a.tau2 >= 0 and 0 <= a.i2 <= 1


def test_the_pooled_estimate_comes_from_the_crossed_model(catalog_con, glove):
    """Not a meta-analysis of the per-template tests (they share their words): the full test's
    crossed model, recomputed here from the stored items and the templates' frames."""
    from test_crossed import stored_fit

    a = run_audit(catalog_con, "sent-weat6", glove)
    row = store.frame(catalog_con, "SELECT * FROM audits WHERE audit_id = ?", [a.audit_id]).row(0, named=True)
    res = store.frame(catalog_con, "SELECT * FROM results WHERE result_id = ?", [a.audit_id]).row(0, named=True)
    want = stored_fit(catalog_con, a.audit_id)
    assert row["pooled_d"] == res["crossed_d"] == pytest.approx(want.d, rel=1e-9)
    assert (row["ci_low"], row["ci_high"]) == (res["crossed_ci_low"], res["crossed_ci_high"])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((want.ci_low, want.ci_high), rel=1e-7)
    assert (row["pi_low"], row["pi_high"]) == pytest.approx((want.pi_low, want.pi_high), rel=1e-7)
    assert row["pi_low"] <= row["ci_low"] and row["pi_high"] >= row["ci_high"]
    assert row["tau2"] == pytest.approx(want.tau2) and row["i2"] == pytest.approx(want.i2) and row["q"] is None
    assert row["pooled_se"] == pytest.approx(want.se_diff / want.sd)
    assert (row["pooled_method"], row["k_meta"]) == ("anova-gpq", 8) and row["pooled_p"] == pytest.approx(want.p)
    assert row["var_share_group_template"] == pytest.approx(want.shares["group_template"])
    assert row["var_share_words"] == res["var_share_words"]


def test_word_influence_equals_leaving_the_word_out(catalog_con, glove):
    a = run_audit(catalog_con, "sent-weat6", glove)
    words = store.frame(catalog_con, "SELECT * FROM audit_words WHERE audit_id = ?", [a.audit_id])
    assert set(words["role"]) == {"X", "Y", "A", "B"} and words.filter(pl.col("role") == "X").height == 8
    items = store.frame(catalog_con, "SELECT role, word, association FROM result_items WHERE result_id = ? AND role IN ('X','Y')",
                        [a.audit_id])
    sx = items.filter((pl.col("role") == "X") & (pl.col("word") != "Greg"))["association"].to_numpy()
    sy = items.filter(pl.col("role") == "Y")["association"].to_numpy()
    greg = words.filter((pl.col("role") == "X") & (pl.col("word") == "Greg")).row(0, named=True)
    assert greg["n_stimuli"] == 8
    assert greg["d_without"] == pytest.approx(stats.effect_size(sx, sy), abs=1e-9)
    assert greg["influence"] == pytest.approx(greg["d_without"] - a.full_d)


def test_audit_is_reproducible_with_a_seed(catalog_con, glove):
    first = run_audit(catalog_con, "sent-weat9", glove, seed=5)
    second = run_audit(catalog_con, "sent-weat9", glove, seed=5)
    cols = ["frame", "analysis", "effect_size", "p_value"]
    get = lambda a: store.frame(catalog_con, f"SELECT {', '.join(cols)} FROM audit_templates WHERE audit_id = ? ORDER BY ALL", [a.audit_id])  # noqa: E731
    assert get(first).equals(get(second))
    assert {k: v for k, v in store.as_record(first).items() if k not in ("audit_id", "run_id")} == \
           {k: v for k, v in store.as_record(second).items() if k not in ("audit_id", "run_id")}


def test_one_template_set_is_refused_and_store_unchanged(catalog_con, glove):
    generate.generate(catalog_con, [SetSpec(n, "single_this") for n in ("flowers", "insects", "pleasant", "unpleasant")],
                      wordlists.load_all())
    before = snapshot(catalog_con)
    with pytest.raises(StimkitError, match=r"uses one target template \('This is X\.'\): "
                                           r"leave-one-template-out and templates as a random factor need at least two"):
        run_audit(catalog_con, "sent-weat1", glove, "single_this")
    assert snapshot(catalog_con) == before


def test_frames_join_templates_across_kinds():
    assert audit.frame("This is {{ word }}.") == audit.frame("This is {{ singular|a }}.") == "This is X."
    assert audit.frame("{% if not person %}It is {{ singular|a }}.{% endif %}") == "It is X."
    assert audit.frame('{{ plural|capfirst }} are {{ "people" if person else "things" }}.') == "X are _."
    assert audit.frame("They are {{ plural }}.") == audit.frame("They are {{ word }}.")


def test_mixed_kind_targets_meet_in_shared_frames(catalog_con, glove):
    a = run_audit(catalog_con, "sent-weat9", glove)  # adjectives against count nouns (and one adjective)
    rows = store.frame(catalog_con, "SELECT * FROM audit_templates WHERE audit_id = ? AND analysis = 'alone' "
                                    "AND effect_size IS NOT NULL ORDER BY frame", [a.audit_id])
    assert rows["frame"].to_list() == ["That is X.", "They are X.", "This is X."]
    assert rows["n_x"].to_list() == [6, 6, 6] and a.pooled_d is not None
    # the crossed model takes every frame, those of one target too (the count nouns' others), of the
    # full test: after its balance=cut, which leaves 12 of the 14 frames
    assert a.n_templates == 14 and a.k_meta == 12


def test_word_level_tests_are_refused(catalog_con):
    with pytest.raises(StimkitError, match="has no template-rendered sets to re-template"):
        audit.retemplate(catalog.get(catalog_con, "weat1"), "past_tense")


def test_fixed_set_corrects_people_and_inherits_ids(empty_con):
    lists = wordlists.load_all()
    generate.generate(empty_con, [SetSpec("pleasant", "may2019_fixed"), SetSpec("family", "may2019_fixed"),
                                  SetSpec("male_names", "may2019_fixed")], lists)
    sentences = set(store.frame(empty_con, "SELECT stimulus FROM current_stimuli")["stimulus"])
    assert {"A friend is a person.", "Friends are people.", "Parents are people.", "A child is a person."} <= sentences
    assert "A friend is a thing." not in sentences and "It is a friend." not in sentences
    assert "A caress is a thing." in sentences  # things stay things
    ids = set(store.frame(empty_con, "SELECT template_id FROM current_stimuli WHERE set_name = 'male_names@may2019_fixed'")["template_id"])
    assert ids == {f"may2019/name:{i}" for i in range(2, 10)}  # inherited, same ids as may2019


def test_compare_cli_writes_results_per_template_set(catalog_db, tmp_path):
    import shutil
    db = tmp_path / "c.duckdb"
    shutil.copy(catalog_db, db)
    r = CliRunner().invoke(app, ["--db", str(db), "audit", "compare", "-t", "sent-weat6", "-e", "glove-6b-50d",
                                 "-s", "may2019", "-s", "past_tense", "--budget", "2000"])
    assert r.exit_code == 0, r.output
    con = store.connect(db)
    tests = sorted(t for (t,) in store.rows(con, "SELECT test FROM results"))
    assert tests == ["sent-weat6", "sent-weat6@past_tense"]
    assert "past_tense" in r.output
    r = CliRunner().invoke(app, ["--db", str(db), "audit", "show"])
    assert r.exit_code == 1 and "no audits" in r.output


def test_compare_of_one_template_set_is_refused_before_any_work(catalog_db, tmp_path):
    import shutil
    db = tmp_path / "one.duckdb"
    shutil.copy(catalog_db, db)
    con = store.connect(db)
    before = snapshot(con)
    con.close()
    r = CliRunner().invoke(app, ["--db", str(db), "audit", "compare", "-t", "sent-weat6", "-e", "glove-6b-50d",
                                 "-s", "past_tense"])
    assert r.exit_code == 2 and r.stderr.strip() == "error: compare needs at least two template sets"
    con = store.connect(db)
    assert snapshot(con) == before  # not even past_tense's sets were generated
    con.close()


def test_frames_with_too_few_sentences_get_no_numbers():
    rng = np.random.default_rng(0)
    cell = audit_stats.subset_test(np.array([0.1, 0.2]), np.array([0.0, -0.1, 0.3]), "greater", 1000, rng)
    assert cell.d is None and cell.note == "fewer than 3 sentences in a target"
    cell = audit_stats.subset_test(np.array([0.1, 0.2, 0.4, 0.3]), np.array([0.0, -0.1, 0.3]), "greater", 1000, rng)
    assert cell.n_x == cell.n_y == 3 and cell.d is not None  # the larger target is cut to 3


def test_audit_line_shows_each_d_with_its_interval(catalog_db, tmp_path):
    import shutil
    db = tmp_path / "a.duckdb"
    shutil.copy(catalog_db, db)
    r = CliRunner().invoke(app, ["--db", str(db), "audit", "templates", "-t", "sent-weat6", "-e", "glove-6b-50d",
                                 "--budget", "1000"])
    assert r.exit_code == 0, r.output
    con = store.connect(db, read_only=True)
    full = store.one(con, "SELECT effect_size, ci_low, ci_high FROM results WHERE test = 'sent-weat6'")
    pooled = store.one(con, "SELECT pooled_d, ci_low, ci_high FROM audits")
    con.close()
    assert f"d={full[0]:+.2f} [{full[1]:.2f}, {full[2]:.2f}] p=" in r.stderr  # the full test's d
    assert f"pooled d={pooled[0]:+.2f} [{pooled[1]:.2f}, {pooled[2]:.2f}] tau2=" in r.stderr  # random-effects d
    r_json = CliRunner().invoke(app, ["--db", str(db), "audit", "templates", "-t", "sent-weat6", "-e", "glove-6b-50d",
                                      "--budget", "1000", "--format", "json"])
    doc = __import__("json").loads(r_json.stdout)  # as `audit show`: the audits and their moving templates
    assert len(doc["rows"]) == 1 and len(doc["templates"]) == 3
    lines = r.stderr.splitlines()  # the audit named on a short line, its figures on indented ones: 80 columns
    audit_lines = lines[:lines.index(next(line for line in lines if line.startswith("Template audits:")))]
    assert lines[0] == "sent-weat6  may2019  glove-6b-50d" and all(len(line) <= 80 for line in audit_lines)
    assert lines[1].startswith("    full test d=") and lines[2].startswith("    pooled d=")
