"""A replicate family where results are read: the summary row in `results` (after its
replicates' rows, never a hypothesis: m counts the replicates), `check`'s notes on a decision
that does not hold in most replicates and on a poor test-retest ICC, a sentence test's
variance split (templates as a factor) against stats.replicates on the stored per-sentence
scores, and the one-line refusal of token-pooled or layer=all members.

The replicates are `vectors:` files written here: random vectors, X pulled towards A and Y
towards B by a strength set per replicate (strong in one, none in the others), so the decision
holds in one replicate of four; the template words are in every vocabulary."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import stimkit
from stimkit.cli import app
from stimkit.errors import UsageError
from stimkit.analysis.replicates import summaries as replicate_summaries
from stimkit.stats.replicates import variance_split
from stimkit.views import check as views_check
from stimkit.views import results as views_results
from test_views_narrow import assert_numbers_whole

X = ["apple", "berry", "cherry", "grape", "lemon", "mango", "melon", "peach"]
Y = ["brick", "stone", "gravel", "cement", "steel", "iron", "copper", "tin"]
A = ["sweet", "tasty", "juicy", "fresh", "ripe", "soft"]
B = ["hard", "heavy", "cold", "rough", "dull", "dense"]
FRAME = ["this", "that", "there", "it", "is"]      # may2019's mass-noun templates: "This is apple."
DIM, ALPHA = 12, 0.05
PULLS = {"seed-0": 3.0, "seed-1": 0.0, "seed-2": 0.0, "seed-3": 0.0}


def write_vectors(path, seed: int, pull: float):
    rng = np.random.default_rng(seed)
    a_dir, b_dir = rng.normal(size=DIM), rng.normal(size=DIM)
    rows = {w: a_dir + rng.normal(size=DIM) for w in A} | {w: b_dir + rng.normal(size=DIM) for w in B}
    rows |= {w: pull * a_dir + rng.normal(size=DIM) for w in X} | {w: pull * b_dir + rng.normal(size=DIM) for w in Y}
    rows |= {w: rng.normal(size=DIM) for w in FRAME}
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{len(rows)} {DIM}\n")
        f.writelines(w + " " + " ".join(f"{v:.6f}" for v in vec) + "\n" for w, vec in rows.items())


LISTS = "\n".join(f'[{name}]\ncategory = "{name}"\nsource = "test"\nkind = "mass_noun"\nwords = {json.dumps(words)}\n'
                  for name, words in (("fruit", X), ("metal", Y), ("soft_words", A), ("hard_words", B)))
WORDS = dict(x="fruit@word", y="metal@word", a="soft_words@word", b="hard_words@word")
SENTENCES = dict(x="fruit@may2019", y="metal@may2019", a="soft_words@may2019", b="hard_words@may2019")


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """A word test and a sentence test over the family `fruit` of four vectors files, and the
    family's reliability."""
    root = tmp_path_factory.mktemp("replicate_views")
    (root / "wl").mkdir()
    (root / "wl" / "lists.toml").write_text(LISTS, encoding="utf-8")
    specs = []
    for k, (name, pull) in enumerate(PULLS.items()):
        write_vectors(root / f"{name}.txt", 10 + k, pull)
        specs.append(f"vectors:{root / name}.txt")
    named = {"fruit": specs}
    db = root / "family.duckdb"
    store = stimkit.open(db, wordlist_dir=root / "wl")
    words = store.test(name="fruit-soft", encoders=["replicates:fruit"], replicates=named, budget=2000, seed=1,
                       alpha=ALPHA, **WORDS)
    sentences = store.test(name="fruit-soft-sent", encoders=["replicates:fruit"], replicates=named, budget=500, seed=1,
                           alpha=ALPHA, context="sentence", **SENTENCES)
    store.reliability(encoders=["replicates:fruit"], replicates=named)
    store.close()
    yield root, db, named, words, sentences


def cli(db, *args, columns=80):
    return CliRunner().invoke(app, ["--db", str(db), *map(str, args)], env={"COLUMNS": str(columns)})


def summary(db, test):
    with stimkit.open(db, read_only=True) as s:
        cur = s.con.execute("SELECT * FROM replicate_summaries WHERE test = ?", [test])
        return dict(zip([c[0] for c in cur.description], cur.fetchone()))


def test_results_shows_the_summary_after_its_replicates_and_m_counts_the_replicates(family):
    root, db, named, words, _ = family
    row = summary(db, "fruit-soft")
    assert row["share_holding"] == pytest.approx(0.25)       # the strong replicate alone rejects
    r = cli(db, "results", "--where", "test = 'fruit-soft'", "-f", "table")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    # one row per replicate, then the summary under the family's encoder: its d the median
    at = [i for i, line in enumerate(lines) if "replicates:fruit" in line]
    assert len(at) == 1, r.stdout
    summary_line = "\n".join(lines[at[0]:at[0] + 3])
    assert f"{row['d_median']:+.2f}" in summary_line or f"{row['d_median']:.2f}" in summary_line, r.stdout
    assert "4 replicates" in r.stdout and "holds in 25%" in r.stdout
    assert "not a hypothesis" in r.stderr and "replicates:fruit" in r.stderr
    # m is the replicates' count: the summary adds no hypothesis to the correction
    j = cli(db, "results", "--where", "test = 'fruit-soft'", "-f", "json")
    doc = json.loads(j.stdout)
    assert doc["family"]["m"] == 4 and len(doc["rows"] if "rows" in doc else doc["results"]) == 4
    (s,) = doc["replicate_summaries"]
    assert s["d_median"] == pytest.approx(row["d_median"]) and s["share_holding"] == pytest.approx(0.25)
    rows = [line for line in lines if "fruit-soft" in line]    # the summary once, after the last replicate
    assert len(rows) == 5 and "replicates:fruit" in rows[-1]
    # at 80 columns (tests/test_views_narrow's oracle): every number whole, the summary's row kept
    with stimkit.open(db, read_only=True) as s:
        df = s.result_rows(where="test = 'fruit-soft'")
        found = replicate_summaries(s.con)
    for width in (80, 100):
        tables, notes = assert_numbers_whole(lambda: views_results.show(df, df.family, "table", summaries=found), width)
        (heads, body), = tables
        assert sum(1 for cells in body if any("replicates" in c for c in cells)) >= 1 and "not a hypothesis" in notes


def test_check_notes_a_decision_holding_in_few_replicates_and_a_poor_test_retest(family):
    root, db, named, words, _ = family
    r = cli(db, "check", "-f", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    rows = rows.get("rows", rows.get("comparisons")) if isinstance(rows, dict) else rows
    mine = [c for c in rows if c["check_name"] == "replicates" and c["tests"] == "fruit-soft"]
    assert len(mine) == 1 and mine[0]["verdict"] == "note" and "25%" in mine[0]["reason"]
    retest = [c for c in rows if c["check_name"] == "test-retest" and c["tests"] == "fruit-soft"]
    with stimkit.open(db, read_only=True) as s:
        stored = s.con.execute("""SELECT coefficient, value FROM reliability_results WHERE measure = 'test-retest'
                                  AND test = 'fruit-soft' ORDER BY coefficient""").fetchall()
    assert stored and len(retest) == len(stored)
    for coefficient, value in stored:
        (c,) = [c for c in retest if c["detail"].startswith(coefficient + " ")]
        assert f"{value:.2f}" in c["detail"]
        # independent noise per replicate: the words' s(w) do not agree across seeds
        assert c["verdict"] == ("note" if value < 0.5 else "consistent")
    assert any(c["verdict"] == "note" for c in retest)
    with stimkit.open(db, read_only=True) as s:
        df = s.check()
    assert_numbers_whole(lambda: views_check.show(df, df.family, "table"), 80)


def test_sentence_family_splits_templates_as_stats_replicates_does(family):
    root, db, named, _, sentences = family
    row = summary(db, "fruit-soft-sent")
    with stimkit.open(db, read_only=True) as s:
        ids = [i for (i,) in s.con.execute("""SELECT result_id FROM replicate_members m JOIN replicate_summaries r
                                               USING (summary_id) WHERE r.test = 'fruit-soft-sent'
                                               ORDER BY result_id""").fetchall()]
        items = s.con.execute("""SELECT result_id, role, word, template_id, association FROM result_items
                                 WHERE result_id IN (SELECT unnest(?)) AND role IN ('X', 'Y')
                                 AND association IS NOT NULL""", [ids]).fetchall()
    assert len(ids) == 4 and len({i[3] for i in items}) == 4           # four replicates, may2019's four frames
    assert len(items) == 4 * 2 * 8 * 4                                  # replicates x sides x words x templates
    split = variance_split(np.array([i[4] for i in items]), [i[0] for i in items], np.array([i[1] == "X" for i in items]),
                           [i[2] for i in items], [i[3] for i in items], rng=np.random.default_rng(0))
    for k, v in split.components.items():
        assert row[f"var_{k}"] == pytest.approx(v, rel=1e-9, abs=1e-12), k
        assert row[f"var_share_{k}"] == pytest.approx(split.shares[k], rel=1e-9, abs=1e-12), k
    assert row["var_templates"] is not None and row["var_method"] == split.scheme


@pytest.mark.parametrize("option", ["pooling=token", "layer=all"])
def test_token_pooled_or_all_layer_members_refused_in_one_line(family, option):
    root, db, named, _, _ = family
    with stimkit.open(db, wordlist_dir=root / "wl") as s:
        before = s.con.execute("SELECT count(*) FROM results").fetchone()[0]
        bad = {"odd": [named["fruit"][0] + "," + option, named["fruit"][1]]}
        with pytest.raises(UsageError) as e:
            s.test(name="fruit-soft", encoders=["replicates:odd"], replicates=bad, budget=200, **WORDS)
        assert "\n" not in str(e.value)
        assert s.con.execute("SELECT count(*) FROM results").fetchone()[0] == before
