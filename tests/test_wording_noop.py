"""Wording audits leave out of an encoder's shares the variants that change nothing for it
(issue 50, item 8): "case-lower" on GloVe 6B (a lower-case vocabulary) and on MiniLM (an uncased
tokenizer), and the punctuation rules on GloVe (punctuation is not a GloVe token). Which variants
change nothing is checked independently of run.wording (GloVe's vectors compared bit for bit,
MiniLM's token ids read with transformers' own tokenizer), and the stored shares are recomputed
by hand from the stored per-variant rows."""

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.catalog import definitions as catalog
from stimkit.cli import app
from stimkit.encoders import resolve
from stimkit.run import wording

RULES = ["tense-past", "punct-exclaim", "punct-none", "case-lower"]   # in the rules file's order
NO_OP = {"glove-6b-50d": ["punct-exclaim", "punct-none", "case-lower"], "minilm": ["case-lower"]}


@pytest.fixture(scope="module")
def audited(catalog_db, tmp_path_factory):
    import shutil

    import stimkit

    path = tmp_path_factory.mktemp("noop") / "w.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        run_id, audits, _, _ = s.audit_perturb(["sent-weat6"], ["glove-6b-50d", "minilm"], alpha=0.01, rules=RULES,
                                               budget=500)
    return path, run_id, {a.encoder.split(",")[0]: a for a in audits}   # minilm: minilm,pooling=mean


def _texts(con, variant: str) -> list[str]:
    """The stimuli of sent-weat6's four sets under a variant of may2019, in the test's order."""
    t = catalog.get(con, "sent-weat6")
    return [s for name in t.sets for (s,) in store.rows(
        con, "SELECT stimulus FROM current_stimuli WHERE set_name = ? ORDER BY ordinal",
        [name.replace("@may2019", f"@{variant}")])]


def test_the_no_op_variants_are_those_that_change_nothing(audited):
    path, run_id, by = audited
    con = store.connect(path, read_only=True)
    original = _texts(con, "may2019")
    glove = resolve("glove-6b-50d")
    g0 = glove.encode(original, [None] * len(original)).vectors
    from transformers import AutoTokenizer

    from stimkit.encoders.transformer import minilm_path

    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    m0 = tok(original)["input_ids"]
    for rule in RULES:
        texts = _texts(con, f"may2019~{rule}")
        assert len(texts) == len(original) and texts != original   # every variant rewrites the text
        same_vectors = np.array_equal(glove.encode(texts, [None] * len(texts)).vectors, g0, equal_nan=True)
        same_ids = tok(texts)["input_ids"] == m0
        assert same_vectors == (rule in NO_OP["glove-6b-50d"])
        assert same_ids == (rule in NO_OP["minilm"])
    con.close()
    for enc, a in by.items():
        assert a.no_op_variants == [f"may2019~{r}" for r in NO_OP[enc]] and a.n_no_op == len(NO_OP[enc])
        assert a.n_variants == len(RULES)
        flags = {v.rule: v.no_op for v in a.variants}
        assert flags == {None: None, **{r: r in NO_OP[enc] for r in RULES}}


def test_a_no_op_variant_gives_the_original_d(audited):
    _, _, by = audited
    for a in by.values():
        for v in a.variants[1:]:
            if v.no_op:   # the same input, the same vectors (GloVe: bit for bit; MiniLM: to float error)
                assert v.effect_size == pytest.approx(a.original_d, abs=1e-5)


def test_shares_by_hand_from_the_stored_rows(audited):
    path, run_id, by = audited
    con = store.connect(path, read_only=True)
    for enc, a in by.items():
        rows = store.rows(con, "SELECT variant, rule, effect_size, p_value, rel_change, sign_flip, decision_flip, no_op "
                               "FROM wording_variants WHERE audit_id = ? ORDER BY rule NULLS FIRST", [a.audit_id])
        (stored,) = store.rows(con, "SELECT n_variants, n_no_op, no_op_variants, rel_change_min, rel_change_max, "
                                    "sign_flip_share, decision_flip_share, verdict FROM wording_audits WHERE audit_id = ?",
                               [a.audit_id])
        (_, _, d0, p0, *_), variants = rows[0], rows[1:]
        kept = [r for r in variants if not r[7]]
        quiet = sorted(r[0] for r in variants if r[7])
        assert [r[1] for r in kept] == sorted(set(RULES) - set(NO_OP[enc]))     # a variant that changes something is kept
        assert sorted(stored[2]) == quiet and stored[:2] == (len(RULES), len(quiet))
        rel = [(d - d0) / abs(d0) for _, _, d, *_ in kept]
        signs = [np.sign(d) != np.sign(d0) for _, _, d, *_ in kept]
        decisions = [(p <= 0.01) != (p0 <= 0.01) for _, _, _, p, *_ in kept]
        assert stored[3] == pytest.approx(min(rel)) and stored[4] == pytest.approx(max(rel))
        assert stored[5] == pytest.approx(np.mean(signs)) and stored[6] == pytest.approx(np.mean(decisions))
        changed = [r for r in kept if r[6] or (r[5] and min(r[3], p0) <= 0.01)]
        assert stored[7] == ("fragile" if changed else "robust")
        assert (a.sign_flip_share, a.decision_flip_share) == (stored[5], stored[6])
    # on GloVe tense-past alone is counted: its range is one point, away from the no-ops' 0 that
    # counting them (the old rule) would have put in it
    g = by["glove-6b-50d"]
    assert g.rel_change_min == g.rel_change_max == next(v.rel_change for v in g.variants if v.rule == "tense-past") != 0
    con.close()


def test_perturb_and_show_name_them(audited):
    path, run_id, by = audited
    r = CliRunner().invoke(app, ["--db", str(path), "audit", "show", "--where", f"run_id = '{run_id}'", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert ("3 variants change nothing for glove-6b-50d (sent-weat6), left out of its shares: punct-exclaim, "
            "punct-none, case-lower") in r.output
    assert "1 variant changes nothing for minilm,pooling=mean (sent-weat6), left out of its shares: case-lower" in r.output
    lines = r.output.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("test,encoder,"))
    table = list(csv.DictReader(lines[start:]))
    row = next(x for x in table if x["encoder"] == "glove-6b-50d")
    assert json.loads(row["no_op_variants"]) == ["may2019~punct-exclaim", "may2019~punct-none", "may2019~case-lower"]
    assert (row["n_no_op"], row["n_variants"]) == ("3", "4")


def test_same_input_compares_vectors_exactly_where_the_encoder_cannot_say():
    a = np.array([[1.0, np.nan], [0.5, 0.25]], dtype=np.float32)
    assert wording.same_input(("vectors", a), ("vectors", a.copy()))           # NaN (no vector) equals NaN
    b = a.copy()
    b[1, 1] = np.nextafter(np.float32(0.25), np.float32(1))                    # one float bit apart: changed
    assert not wording.same_input(("vectors", a), ("vectors", b))
    assert not wording.same_input(("vectors", a), ("vectors", a[:1]))
    assert wording.same_input(("inputs", [(1, 2), (3,)]), ("inputs", [(1, 2), (3,)]))
    assert not wording.same_input(("inputs", [(1, 2)]), ("inputs", [(1, 3)]))
    assert not wording.same_input(("inputs", [(1, 2)]), ("vectors", a))


def test_every_variant_no_op_gives_no_share(catalog_db, tmp_path):
    """Only case-lower on GloVe: nothing is counted, so no share and the verdict 'unchanged'."""
    import shutil

    import stimkit

    path = tmp_path / "w.duckdb"
    shutil.copy(catalog_db, path)
    with stimkit.open(path) as s:
        _, (a,), _, _ = s.audit_perturb(["sent-weat6"], ["glove-6b-50d"], alpha=0.01, rules=["case-lower"], budget=200)
    assert (a.n_no_op, a.no_op_variants, a.verdict) == (1, ["may2019~case-lower"], "unchanged")
    assert a.sign_flip_share is None and a.decision_flip_share is None and a.rel_change_min is None


def test_encoder_inputs_by_hand():
    """GloVe reads the multiset of its in-vocabulary lower-case tokens (a mean sees no order, nor
    punctuation); MiniLM its uncased WordPiece ids, punctuation included."""
    glove, minilm = resolve("glove-6b-50d"), resolve("minilm")
    texts = ["The doctor is here.", "Here is the doctor!", "the doctor is here", "The doctor was here."]
    g = glove.inputs(texts, [None] * 4)
    ids = {glove.vectors.index[w] for w in ("the", "doctor", "is", "here")}
    assert g[0] == g[1] == g[2] == tuple(sorted(ids)) and g[3] != g[0]
    m = minilm.inputs(texts, [None] * 4)
    assert m[0] == minilm.inputs(["THE DOCTOR IS HERE."], [None])[0]      # uncased: the same ids
    assert len({m[0], m[1], m[2], m[3]}) == 4                              # order, "!", no stop, tense: all read
    assert m[0][0] == 101 and m[0][-1] == 102                              # [CLS] ... [SEP], as encode reads them


def test_token_pooling_reads_the_span_too():
    """minilm,pooling=token pools the word's own tokens: equal ids with the word elsewhere differ."""
    enc = resolve("minilm,pooling=token")
    got = enc.inputs(["The doctor is here.", "the doctor is here.", "The doctor is here."], [(4, 10), (4, 10), (0, 3)])
    assert got[0] == got[1] and got[0] != got[2] and got[0][0] == got[2][0]   # same ids, another span
    glove = resolve("glove-6b-50d,pooling=token")
    g = glove.inputs(["The doctor is here.", "A doctor was there!"], [(4, 10), (2, 8)])
    assert g[0] == g[1] == (glove.vectors.index["doctor"],)                  # the span's token alone
