"""Which results count: correction families, checks over the store, cuts apart from the seed,
unequal-size tests, honest p_method, pattern selection and the power flag (issue 10)."""

import json
import shutil
from itertools import combinations
from math import comb

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from stimkit.analysis import consistency, families as analysis
from stimkit.catalog import definitions as catalog
from stimkit import cli, stats, store
from stimkit.encoders import embeddings
from stimkit.errors import UsageError
from stimkit.run import association, plan
from stimkit.run.options import Options
from stimkit.cli import app

from conftest import snapshot

invoke = CliRunner().invoke


@pytest.fixture
def db(catalog_db, tmp_path):
    path = tmp_path / "families.duckdb"
    shutil.copy(catalog_db, path)
    return path


def run_cli(db, *args):
    return invoke(app, ["--db", str(db), *args])


def main_cli(db, capsys, *args):
    """The console script's own entry point: Click's usage errors pass through it."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--db", str(db), *args])
    captured = capsys.readouterr()
    return exit_.value.code, captured.out, captured.err


# ------------------------------------------------------------------ corrections by hand

P = np.array([0.01, 0.04, 0.03, 0.03, 0.20, 1.0, 0.001])
# Holm: sorted 0.001, 0.01, 0.03, 0.03, 0.04, 0.2, 1 (m = 7), factors 7..1, running max
HOLM = {0.001: 0.007, 0.01: 0.06, 0.03: 0.15, 0.04: 0.15, 0.20: 0.4, 1.0: 1.0}
# BH: m p / rank, running min from the top: 1 -> 1, 0.2 -> 0.2333, 0.04 -> 0.056, 0.03 (rank 4) -> 0.0525
# (both ties take the smaller, 0.0525), 0.01 -> 0.035, 0.001 -> 0.007
BH = {0.001: 0.007, 0.01: 0.035, 0.03: 0.0525, 0.04: 0.056, 0.20: 0.7 / 3, 1.0: 1.0}


def planted(con, p_values, run_id="r1", seconds_apart=0):
    con.execute("INSERT INTO runs (run_id, seed, stimkit_version) VALUES (?, 0, 'x')", [run_id])
    for i, p in enumerate(p_values):
        con.execute("INSERT INTO results (result_id, run_id, test, test_source, encoder, model, fingerprint, context, "
                    "n_dropped_oov, n_balanced_away, ddof, clustered, stimkit_version, p_value, effect_size, alternative, "
                    "balance, p_method) VALUES (?, ?, ?, 'catalog', 'e', 'e', 'f', 'word', 0, 0, 1, false, 'x', ?, 0.5, "
                    "'greater', 'cut', 'exact')", [f"{run_id}/t{i}/f", run_id, f"t{i}", float(p)])


@pytest.mark.parametrize("method, expected", [("holm", HOLM), ("bh", BH)])
def test_corrections_equal_a_hand_computation_with_ties_and_p_one(empty_con, method, expected):
    planted(empty_con, P)
    family = analysis.define_family(empty_con, alpha=0.05)
    df = analysis.corrected(empty_con, method)
    assert family.m == 7 and df["m"].unique().to_list() == [7]
    for p, adj in zip(df["p_value"], df["p_adjusted"]):
        assert adj == pytest.approx(expected[p], rel=1e-12)


def test_by_is_bh_times_the_harmonic_sum(empty_con):
    planted(empty_con, P)
    analysis.define_family(empty_con)
    c = sum(1 / i for i in range(1, 8))
    df = analysis.corrected(empty_con, "by")
    for p, adj in zip(df["p_value"], df["p_adjusted"]):
        assert adj == pytest.approx(min(1.0, BH[p] * c), rel=1e-12)


def test_replicates_never_add_to_m(empty_con):
    planted(empty_con, P, "r1")
    planted(empty_con, P * 0.5, "r2")  # the same hypotheses computed again, later
    family = analysis.define_family(empty_con)
    df = analysis.corrected(empty_con, "holm")
    assert family.m == 7 and sorted(df["run_id"].unique().to_list()) == ["r2"]
    assert analysis.define_family(empty_con, "p_value < 0.01").m == 2  # --where filters the family
    assert analysis.define_family(empty_con, run="r1").m == 7
    assert analysis.define_family(empty_con, run="latest").run == "r2"


@pytest.mark.parametrize("correct", ["holm", "bh", "by"])
def test_running_twice_gives_the_single_run_adjusted_p(db, correct):
    tests = ["weat1", "weat2", "weat6", "weat7"]
    assert run_cli(db, "test", *tests, "--budget", "2000").exit_code == 0
    once = json.loads(run_cli(db, "results", "--correct", correct, "--format", "json").stdout)
    assert run_cli(db, "test", *tests, "--budget", "2000").exit_code == 0
    twice = json.loads(run_cli(db, "results", "--correct", correct, "--format", "json").stdout)
    assert once["family"]["m"] == twice["family"]["m"] == 4
    adjusted = lambda doc: {r["test"]: r["p_adjusted"] for r in doc["rows"]}  # noqa: E731
    assert adjusted(once) == adjusted(twice)
    assert {r["run_id"] for r in twice["rows"]} != {r["run_id"] for r in once["rows"]}


def test_results_say_m_and_the_family_on_stderr(db):
    run_cli(db, "test", "weat6", "--budget", "1000")
    r = run_cli(db, "results", "--format", "csv")
    assert "m = 1" in r.stderr and "latest result per hypothesis" in r.stderr
    assert r.stdout.splitlines()[0].startswith("result_id,")
    options = pl.read_csv(r.stdout.encode())["options"][0]
    assert json.loads(options)["seed"] == 0  # the stored options, never overwritten


# ------------------------------------------------------------------ checks over the store

def test_check_finds_c7_vs_c8_across_runs(db):
    run_cli(db, "test", "weat7", "--budget", "1000")
    run_cli(db, "test", "weat8", "--budget", "1000")
    run_cli(db, "test", "weat1", "--budget", "1000")  # the latest run alone holds neither
    r = run_cli(db, "check", "--format", "json")
    doc = json.loads(r.stdout)
    c7 = [c for c in doc["rows"] if c["check_name"] == "C7 vs C8" and c["tests"] == "weat7 / weat8"]
    assert len(c7) == 1 and c7[0]["verdict"] in ("consistent", "note", "violation") and len(c7[0]["result_ids"]) == 2
    n = doc["comparisons"]
    assert n == len(doc["rows"]) and f"{n} comparison{'s' if n != 1 else ''}," in r.stderr


def test_check_on_an_empty_store_says_zero_comparisons(empty_con, tmp_path):
    path = tmp_path / "s.duckdb"
    empty_con.close()
    r = run_cli(path, "check")
    assert r.exit_code == 0 and r.stderr.startswith("0 comparisons, 0 violations")


def test_check_reports_a_planted_violation_by_result_id(empty_con):
    # both significant with opposite signs: a violation (a tested claim), named by result id
    planted(empty_con, [1e-6, 1e-4])
    empty_con.execute("UPDATE results SET test = 'weat7', effect_size = 1.1 WHERE test = 't0'")
    empty_con.execute("UPDATE results SET test = 'weat8', effect_size = -0.2 WHERE test = 't1'")
    analysis.define_family(empty_con)
    row = consistency.consistency(empty_con, 0.01).filter(pl.col("check_name") == "C7 vs C8").row(0, named=True)
    assert row["verdict"] == "violation" and row["result_ids"] == ["r1/t0/f", "r1/t1/f"]
    assert row["reason"] == "both significant with opposite signs"


def test_check_reports_decisions_on_either_side_of_alpha_as_a_note(empty_con):
    # one significant, one not, opposite signs, no stored s(w) to test the difference: the
    # decision heuristics' findings, reported as a note (not a tested violation)
    planted(empty_con, [1e-6, 0.6])
    empty_con.execute("UPDATE results SET test = 'weat7', effect_size = 1.1 WHERE test = 't0'")
    empty_con.execute("UPDATE results SET test = 'weat8', effect_size = -0.2 WHERE test = 't1'")
    analysis.define_family(empty_con)
    row = consistency.consistency(empty_con, 0.01).filter(pl.col("check_name") == "C7 vs C8").row(0, named=True)
    assert row["verdict"] == "note" and row["result_ids"] == ["r1/t0/f", "r1/t1/f"]
    assert "different decisions at alpha" in row["reason"] and "opposite signs of d" in row["reason"]


def test_check_marks_a_missing_partner_not_comparable(empty_con):
    planted(empty_con, [0.001])
    empty_con.execute("UPDATE results SET test = 'weat3'")
    analysis.define_family(empty_con)
    df = consistency.consistency(empty_con, 0.01)
    c345 = df.filter(pl.col("check_name") == "C3/C4/C5").row(0, named=True)
    assert c345["verdict"] == "not comparable" and c345["heuristic"] and "no result for weat4" in c345["reason"]


# ------------------------------------------------------------------ cuts and unequal sizes

def run_one(con, test, enc, opts, seed):
    """One test on one encoder in a run of its own (started with `seed`), its vectors encoded first."""
    planned = plan.make(con, [test], [enc.spec], opts)
    for e, stimuli in planned.encodings:
        embeddings.encode_missing(con, e, stimuli)
    (pt,) = planned.tests
    with store.transaction(con):
        run_id = store.start_run(con, "t", seed)
        (res,) = association.run_one(con, run_id, pt, enc, pt.options)  # WEAT alone: one result
        return res


def test_the_cut_does_not_move_with_the_seed(catalog_con):
    enc = __import__("stimkit.encoders", fromlist=["resolve"]).resolve("glove-6b-50d")
    test = catalog.get(catalog_con, "weat1")
    rows = []
    for seed in (1, 2):
        rows.append(run_one(catalog_con, test, enc, Options(seed=seed, budget=2000), seed))
    assert rows[0].n_balanced_away == 1 and rows[0].cut_seed == 0
    assert abs(rows[0].effect_size - rows[1].effect_size) < 1e-12
    other = run_one(catalog_con, test, enc, Options(seed=1, budget=2000, cut_seed=5), 1)
    dropped = store.rows(catalog_con, "SELECT result_id, stimulus FROM result_items WHERE dropped = 'balanced' ORDER BY 1")
    assert len({s for _, s in dropped}) >= 1 and other.cut_seed == 5


def brute_force_mean_difference_p(sx, sy):
    values, n = np.concatenate([sx, sy]), len(sx)
    observed = sx.mean() - sy.mean()
    hits = total = 0
    for idx in combinations(range(len(values)), n):
        mask = np.zeros(len(values), bool)
        mask[list(idx)] = True
        total += 1
        hits += values[mask].mean() - values[~mask].mean() >= observed - 1e-12
    return hits / total, total


def test_balance_none_is_exact_on_unequal_sizes():
    rng = np.random.default_rng(4)
    X, Y, A, B = rng.normal(size=(5, 6)), rng.normal(size=(4, 6)) + 0.3, rng.normal(size=(3, 6)), rng.normal(size=(3, 6))
    s = stats.association(np.concatenate([X, Y]), A, B)
    pv = stats.permutation_p(s, 5, "greater", "auto", 1000)
    expected, total = brute_force_mean_difference_p(s[:5], s[5:])
    assert pv.method == "exact" and pv.partitions == total == comb(9, 5)
    assert pv.p == pytest.approx(expected, abs=1e-15) and pv.min_p == 1 / 126


def test_balance_none_runs_unequal_targets_through_the_cli(db):
    r = run_cli(db, "test", "weat1", "--balance", "none", "--budget", "1000")
    assert r.exit_code == 0, r.output
    con = store.connect(db)
    n_x, n_y, kind, cut_seed = store.one(con, "SELECT n_x, n_y, statistic_kind, cut_seed FROM results")
    assert (n_x, n_y, kind, cut_seed) == (24, 25, "mean difference", None)


def test_cuts_store_their_spread(db):
    r = run_cli(db, "test", "sent-weat9", "--cuts", "20", "--budget", "2000")
    assert r.exit_code == 0, r.output
    con = store.connect(db)
    res = store.frame(con, "SELECT * FROM results").row(0, named=True)
    cuts = store.frame(con, "SELECT * FROM result_cuts ORDER BY cut")
    assert cuts.height == 20 == res["cuts"] and cuts["cut_seed"].to_list() == list(range(20))
    assert res["cut_d_min"] == pytest.approx(cuts["effect_size"].min()) and res["cut_d_max"] == pytest.approx(cuts["effect_size"].max())
    assert res["cut_d_median"] == pytest.approx(cuts["effect_size"].median())
    assert res["cut_reject_share"] == pytest.approx((cuts["p_value"] <= 0.01).mean())
    assert cuts["effect_size"][0] == pytest.approx(res["effect_size"], abs=1e-12)  # cut 0 is the single-cut result
    assert cuts["effect_size"].n_unique() > 1


# ------------------------------------------------------------------ honest records

def test_p_method_is_the_procedure_that_ran(catalog_con):
    enc = __import__("stimkit.encoders", fromlist=["resolve"]).resolve("glove-6b-50d")
    test = catalog.get(catalog_con, "sent-weat6")
    sampled = run_one(catalog_con, test, enc, Options(clustered=True, method="sampled", budget=500), 0)
    assert sampled.p_method == "sampled-clustered" and sampled.min_p == 1 / 500
    with pytest.raises(UsageError, match="no parametric form"):
        Options(clustered=True, method="parametric")


def test_a_tiny_test_is_flagged_as_unable_to_reject(db):
    x = "SELECT * FROM current_stimuli WHERE set_name = 'flowers@word' AND ordinal < 4"
    y = "SELECT * FROM current_stimuli WHERE set_name = 'insects@word' AND ordinal < 4"
    r = run_cli(db, "test", "--x", x, "--y", y, "--a", "pleasant@word", "--b", "unpleasant@word", "--name", "tiny")
    assert r.exit_code == 0 and r.stderr.count("cannot reach p <= 0.01") == 1
    doc = json.loads(run_cli(db, "results", "--format", "json").stdout)
    row = doc["rows"][0]
    assert row["min_p"] == pytest.approx(1 / 70) and row["can_reject"] is False
    assert "†" in run_cli(db, "results", "--table").stdout


# ------------------------------------------------------------------ selection and failures

def test_patterns_select_catalog_and_imported_tests(catalog_con):
    names = [t.name for t in catalog.select(catalog_con, ["sent-weat1*"])]
    assert names == ["sent-weat1", "sent-weat10"]
    catalog_con.execute("INSERT INTO imported_tests (name, source, x_set, y_set, a_set, b_set) VALUES "
                        "('import:mine', 'import:x', 'flowers@word', 'insects@word', 'pleasant@word', 'unpleasant@word')")
    assert "import:mine" in [t.name for t in catalog.select(catalog_con, None, everything=True)]
    assert [t.name for t in catalog.select(catalog_con, None, True, "imported")] == ["import:mine"]
    assert [t.name for t in catalog.select(catalog_con, ["*mine"])] == ["import:mine"]


def test_a_failing_test_does_not_stop_the_others(db):
    con = store.connect(db)
    con.execute("INSERT INTO imported_tests (name, source, x_set, y_set, a_set, b_set) VALUES "
                "('import:oov', 'import:x', 'SELECT unnest([''zzqx'', ''zzqy'']) AS stimulus', 'SELECT unnest([''qqzx'', ''qqzy'']) AS stimulus', "
                "'pleasant@word', 'unpleasant@word')")
    con.close()
    r = run_cli(db, "test", "weat6", "import:oov", "weat2", "--budget", "1000")
    assert r.exit_code == 1
    failed = [line for line in r.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "test import:oov, encoder glove-6b-50d:" in failed[0] and "no stimulus" in failed[0]
    assert "2 results from 3 tests x 1 encoder, 1 failure" in r.stderr
    con = store.connect(db)
    assert sorted(t for (t,) in store.rows(con, "SELECT test FROM results")) == ["weat2", "weat6"]


@pytest.mark.parametrize("args, message", [
    (["test", "weat1", "--cuts", "0"], "--cuts must be at least 1, not 0"),
    (["test", "weat1", "--cut-seed", "abc"], "Invalid value for '--cut-seed'"),
    (["test", "nosuch*"], "no test matches 'nosuch*'"),
])
def test_bad_selection_options_exit_2_with_one_line(db, capsys, args, message):
    con = store.connect(db)
    before = snapshot(con)
    con.close()
    code, out, err = main_cli(db, capsys, *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err
    con = store.connect(db)
    assert snapshot(con) == before
