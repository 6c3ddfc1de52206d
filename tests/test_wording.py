"""Wording audits (run.wording): a test under every rewording of its templates, its numbers
checked by hand and by invariants; the bad inputs leave the store as it was."""

import json

import numpy as np
import pytest
from scipy.stats import kendalltau
from typer.testing import CliRunner

from stimkit import stats, store
from stimkit.catalog import definitions as catalog
from stimkit.cli import app
from stimkit.encoders import resolve
from stimkit.run import wording

from conftest import snapshot

RULES = ["tense-past", "contraction", "punct-none", "case-lower"]  # in the rules file's order


@pytest.fixture(scope="module")
def audited(catalog_db, tmp_path_factory):
    import shutil

    import stimkit

    path = tmp_path_factory.mktemp("wording") / "w.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        run_id, audits, rankings, families = s.audit_perturb(["sent-weat6"], ["glove-6b-50d"], alpha=0.01,
                                                             rules=RULES, budget=2_000)
    return path, run_id, audits, rankings, families


def test_each_variant_is_the_test_on_the_reworded_sentences(audited):
    path, run_id, (a,), rankings, families = audited
    con = store.connect(path, read_only=True)
    glove = resolve("glove-6b-50d")
    enc = lambda texts: glove.encode(texts, [None] * len(texts)).vectors  # noqa: E731
    t = catalog.get(con, "sent-weat6")
    assert [v.variant for v in a.variants] == ["may2019"] + [f"may2019~{r}" for r in RULES]
    for v in a.variants:
        sets = {r: store.rows(con, "SELECT stimulus FROM current_stimuli WHERE set_name = ? ORDER BY ordinal",
                              [t.sets[i].replace("@may2019", f"@{v.variant}")]) for i, r in enumerate("xyab")}
        X, Y, A, B = (enc([s for (s,) in sets[r]]) for r in "xyab")
        s = stats.association(np.concatenate([X, Y]), A, B)
        assert (v.n_x, v.n_y) == (len(X), len(Y)) == (64, 64)
        assert v.effect_size == pytest.approx(stats.effect_size(s[:64], s[64:]), abs=1e-9)
    # the reworded sentences are there: "John was here." in the past-tense variant
    assert store.rows(con, "SELECT count(*) FROM current_stimuli WHERE set_name = 'male_names@may2019~tense-past' "
                           "AND stimulus = 'John was here.'") == [(1,)]
    con.close()


def test_summary_numbers_follow_from_the_variants(audited):
    _, run_id, (a,), rankings, families = audited
    d0 = a.original_d
    by = {v.rule: v for v in a.variants[1:]}
    for v in a.variants[1:]:
        assert v.rel_change == pytest.approx((v.effect_size - d0) / abs(d0))
        assert v.sign_flip == (np.sign(v.effect_size) != np.sign(d0))
        assert v.decision_flip == ((v.p_value <= a.alpha) != (a.original_p <= a.alpha))
    # GloVe's sentence vector is the mean of its lower-cased word vectors, punctuation left out:
    # rewordings in punctuation and case cannot move d at all
    assert by["punct-none"].rel_change == 0 and by["case-lower"].rel_change == 0
    assert by["tense-past"].rel_change != 0
    # ... so they change nothing for GloVe and count in none of its shares (tests/test_wording_noop.py)
    assert [v.rule for v in a.variants[1:] if v.no_op] == ["punct-none", "case-lower"] and a.n_no_op == 2
    counted = [v for v in a.variants[1:] if not v.no_op]
    rel = [v.rel_change for v in counted]
    assert (a.rel_change_min, a.rel_change_max) == (min(rel), max(rel))
    assert a.n_variants == len(RULES)
    assert a.sign_flip_share == np.mean([v.sign_flip for v in counted])
    assert a.decision_flip_share == np.mean([v.decision_flip for v in counted])
    changed = [v for v in counted if v.decision_flip or (v.sign_flip and min(v.p_value, a.original_p) <= a.alpha)]
    assert a.verdict == ("fragile" if changed else "robust")
    assert 0 < a.template_share < 1 and np.isfinite(a.family_d)
    assert rankings == []   # one encoder: no order to keep


def test_stored_rows_and_audit_show(audited):
    path, run_id, (a,), _, _ = audited
    con = store.connect(path, read_only=True)
    (row,) = store.rows(con, "SELECT n_variants, original_d, verdict FROM wording_audits WHERE run_id = ?", [run_id])
    assert row == (4, a.original_d, a.verdict)
    assert store.rows(con, "SELECT count(*) FROM wording_variants WHERE audit_id = ?", [a.audit_id]) == [(5,)]
    prov = store.rows(con, "SELECT rule, parent_template_id, text FROM template_variants "
                           "WHERE template_id = 'may2019~tense-past/name:6'")
    assert prov == [("tense-past", "may2019/name:6", "{{ word|capfirst }} was here.")]
    con.close()
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "show", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert "sent-weat6,glove-6b-50d,may2019,4," in r.output
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "show", "--variants", "--format", "csv"])
    assert r.exit_code == 0, r.output
    past = next(x for x in r.output.splitlines() if ",may2019~tense-past," in x).split(",")
    v = next(v for v in a.variants if v.rule == "tense-past")
    assert float(past[6]) == pytest.approx(v.effect_size) and float(past[8]) == pytest.approx(v.rel_change)


def test_ranking_by_hand():
    d = {"glove": [1.0, 0.9, 0.2, 1.1], "minilm": [0.5, 0.8, 0.7, 0.4], "use": [0.1, 0.0, 0.3, 0.2]}
    r = wording.ranking("run", "t", d)
    assert r.encoders == ["glove", "minilm", "use"] and r.n_variants == 3
    original = [1.0, 0.5, 0.1]
    taus = [kendalltau(original, [d[e][j] for e in d]).statistic for j in (1, 2, 3)]
    assert r.mean_tau == pytest.approx(np.mean(taus))
    assert r.keep_share == pytest.approx(2 / 3)  # variant 2 puts minilm and use above glove
    assert wording.ranking("run", "t", {"glove": [1.0, 2.0]}) is None


def test_relative_change_is_seshadris():
    # an 81% reduction and a 162% increase (Seshadri et al. 2022's extremes), by hand
    assert wording.relative_change(0.19, 1.0) == pytest.approx(-0.81)
    assert wording.relative_change(2.62, 1.0) == pytest.approx(1.62)
    assert wording.relative_change(-0.5, -1.0) == pytest.approx(0.5)   # against |d0|
    assert wording.relative_change(1.0, 0.0) is None


def _slot_removing_set(tmp_path):
    """A copy of may2019 whose _set.toml adds a rule of the user's that removes the slot."""
    import shutil

    from stimkit.paths import data_dir

    folder = tmp_path / "tpl" / "may2019"
    shutil.copytree(data_dir("templates") / "may2019", folder)
    with open(folder / "_set.toml", "a") as f:
        f.write("[[perturb.rules]]\nname = \"nameless\"\nsubs = [['\\{\\{ word\\|capfirst \\}\\}', 'Someone']]\n")
    return tmp_path / "tpl"


def _copy(catalog_db, tmp_path):
    """A private copy of the generated catalog store."""
    import shutil

    path = tmp_path / "s.duckdb"
    shutil.copy(catalog_db, path)
    return path


def test_bad_input_a_rule_that_removes_the_slot(catalog_db, tmp_path):
    path = _copy(catalog_db, tmp_path)
    con = store.connect(path)
    before = snapshot(con)
    con.close()
    tpl = _slot_removing_set(tmp_path)
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "perturb", "-t", "sent-weat6", "-e", "glove-6b-50d",
                                 "--template-dir", str(tpl), "--rule", "nameless"])
    assert r.exit_code != 0
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "perturbation rule 'nameless'" in lines[0] and "removes the slot from" in lines[0]
    con = store.connect(path)
    assert snapshot(con) == before
    con.close()


def test_bad_input_family_over_its_bound_and_a_test_without_templates(catalog_db, tmp_path):
    path = _copy(catalog_db, tmp_path)
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "perturb", "-t", "sent-weat6", "--max-variants", "3"])
    assert r.exit_code == 2 and "over the bound of 3 (raise it with --max-variants" in r.output
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "perturb", "-t", "weat6"])
    assert r.exit_code == 2 and "a wording audit perturbs one template set" in r.output


def test_from_a_study_file_and_dry_run(catalog_db, tmp_path):
    path = _copy(catalog_db, tmp_path)
    study = tmp_path / "study.toml"
    study.write_text('name = "mine"\ntests = ["sent-weat6"]\nencoders = ["glove-6b-50d"]\nalpha = 0.05\n')
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "perturb", "--study", str(study), "--rule", "syn-present",
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{"):r.output.rindex("}") + 1])
    (row,) = doc["rows"]
    assert (row["test"], row["encoder"], row["n_variants"], row["alpha"]) == ("sent-weat6", "glove-6b-50d", 1, 0.05)
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "perturb", "-t", "sent-weat6", "--dry-run", "--format", "csv"])
    assert r.exit_code == 0 and "may2019,may2019~syn-called,synonymous frame,3," in r.output
