"""A test over a family of replicates (run.replicates) and the reliability of stored results
(run.reliability): the summary row against its replicates' stored results computed by hand,
the shared-vocabulary rule, the refusals (store unchanged), and the stored coefficients against
pingouin on the stored per-word scores.

The replicates are `vectors:` files written here (word2vec text format): random vectors with X
drawn towards A and Y towards B, a different draw per replicate, so d varies between them."""

from __future__ import annotations

import numpy as np
import pytest

import stimkit
from stimkit.errors import InputError, UsageError

X = ["apple", "berry", "cherry", "grape", "lemon", "mango", "melon", "peach"]
Y = ["brick", "stone", "gravel", "cement", "steel", "iron", "copper", "tin"]
A = ["sweet", "tasty", "juicy", "fresh", "ripe", "soft"]
B = ["hard", "heavy", "cold", "rough", "dull", "dense"]
DIM = 12
ALPHA = 0.05


def write_vectors(path, seed: int, leave_out=(), pull: float = 0.6):
    rng = np.random.default_rng(seed)
    a_dir, b_dir = rng.normal(size=DIM), rng.normal(size=DIM)
    rows = {}
    for w in A:
        rows[w] = a_dir + rng.normal(size=DIM)
    for w in B:
        rows[w] = b_dir + rng.normal(size=DIM)
    strength = pull * rng.uniform(0.2, 1.5)   # the replicate's own effect: d varies between replicates
    for w in X:
        rows[w] = strength * a_dir + rng.normal(size=DIM)
    for w in Y:
        rows[w] = strength * b_dir + rng.normal(size=DIM)
    words = [w for w in rows if w not in leave_out]
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{len(words)} {DIM}\n")
        for w in words:
            f.write(w + " " + " ".join(f"{v:.6f}" for v in rows[w]) + "\n")


LISTS = "\n".join(f'[{name}]\ncategory = "{name}"\nsource = "test"\nkind = "{kind}"\nwords = {words!r}\n'.replace("'", '"')
                  for name, kind, words in (("fruit", "mass_noun", X), ("metal", "mass_noun", Y),
                                            ("soft_words", "adjective", A), ("hard_words", "adjective", B)))
SETS = dict(x="fruit@word", y="metal@word", a="soft_words@word", b="hard_words@word")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("replicates")
    (root / "wl").mkdir()
    (root / "wl" / "lists.toml").write_text(LISTS, encoding="utf-8")
    files = {}
    for kind, k in [("seed", 0), ("seed", 1), ("seed", 2), ("seed", 3), ("boot", 0), ("boot", 1), ("boot", 2)]:
        files[f"{kind}-{k}"] = root / f"{kind}-{k}.txt"
        write_vectors(files[f"{kind}-{k}"], 100 * (kind == "boot") + k)
    files["gappy"] = root / "gappy.txt"
    write_vectors(files["gappy"], 7, leave_out=("peach", "brick"))
    return root, files


def open_store(root, name):
    return stimkit.open(root / name, wordlist_dir=root / "wl")


def counts(store) -> dict:
    return {t: store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("runs", "results", "result_items", "replicate_summaries", "replicate_members",
                      "reliability_results")}


@pytest.fixture(scope="module")
def family_run(study):
    """The family of 4 seeds and 3 bootstrap files, WEAT and two more metrics, and its reliability."""
    root, files = study
    store = open_store(root, "family.duckdb")
    named = {"fruit": [f"vectors:{files[k]}" for k in ("seed-0", "seed-1", "seed-2", "seed-3", "boot-0", "boot-1", "boot-2")]}
    report = store.test(name="fruit-soft", encoders=["replicates:fruit"], replicates=named, budget=2000, seed=1,
                        alpha=ALPHA, metrics=("weat", "rnd", "semaxis"), **SETS)
    run_id, coefficients = store.reliability(run=report.run_id, encoders=["replicates:fruit"], replicates=named)
    yield store, report, named, run_id, coefficients
    store.close()


def test_summary_row_is_the_replicates_median_quantiles_and_share(family_run):
    store, report, named, _, _ = family_run
    (summary,) = report.summaries
    row = store.replicate_summaries(run=report.run_id).row(0, named=True)
    stored = store.con.execute("""SELECT m.kind, r.effect_size, r.p_value FROM replicate_members m
                                  JOIN results r USING (result_id) WHERE m.summary_id = ? ORDER BY m.replicate""",
                               [summary.summary_id]).fetchall()
    # every replicate's ordinary result is a member, once; the summary sits under the family's encoder
    assert len(stored) == 7 and row["encoder"] == "replicates:fruit" and row["n_replicates"] == 7
    assert (row["n_seed"], row["n_boot"]) == (4, 3)
    d = np.array([s[1] for s in stored])
    assert row["d_median"] == pytest.approx(np.median(d), abs=1e-12)
    assert row["d_low"] == pytest.approx(np.percentile(d, 2.5), abs=1e-12)
    assert row["d_high"] == pytest.approx(np.percentile(d, 97.5), abs=1e-12)
    assert row["share_holding"] == pytest.approx(np.mean([s[2] <= ALPHA for s in stored]), abs=1e-12)
    seeds = np.array([s[1] for s in stored if s[0] == "seed"])
    boots = np.array([s[1] for s in stored if s[0] == "boot"])
    assert row["seed_d_median"] == pytest.approx(np.median(seeds), abs=1e-12)
    assert (row["seed_d_low"], row["seed_d_high"]) == pytest.approx(tuple(np.percentile(seeds, [2.5, 97.5])), abs=1e-12)
    assert row["boot_d_sd"] == pytest.approx(np.std(boots, ddof=1), abs=1e-12)
    assert len(set(np.round(d, 9))) > 1   # the replicates differ: the spread is not a constant's
    # the variance split ran on the replicates' s(w): its shares make up the whole
    shares = [row[f"var_share_{k}"] for k in ("words", "templates", "group_template", "replicates",
                                               "group_replicate", "residual")]
    assert sum(shares) == pytest.approx(1.0) and row["var_method"].startswith("sequential")
    # the same vocabulary everywhere: every word of the test is read, none said missing
    assert row["missing_words"] == [] and row["n_shared_words"] == len(X + Y + A + B)


def test_replicates_of_different_vocabularies_use_the_shared_words(study, capsys):
    root, files = study
    store = open_store(root, "vocab.duckdb")
    alone = store.test(name="fruit-soft", encoders=[f"vectors:{files['seed-0']}"], budget=500, **SETS)
    (r_alone,) = alone.results
    assert (r_alone.n_x, r_alone.n_y) == (8, 8)
    named = {"gap": [f"vectors:{files['seed-0']}", f"vectors:{files['gappy']}"]}
    report = store.test(name="fruit-soft", encoders=["replicates:gap"], replicates=named, budget=500, **SETS)
    # both replicates read only the words both have: peach (X) and brick (Y) left out of each
    assert sorted((r.n_x, r.n_y) for r in report.results) == [(7, 7), (7, 7)]
    for r in report.results:
        words = {w for (w,) in store.con.execute("SELECT word FROM result_items WHERE result_id = ?",
                                                 [r.result_id]).fetchall()}
        assert "peach" not in words and "brick" not in words and "apple" in words
    (summary,) = report.summaries
    assert sorted(summary.missing_words) == ["brick", "peach"]
    assert summary.n_shared_words == len(X + Y + A + B) - 2 and (summary.vocab_min, summary.vocab_max) == (26, 28)
    (note,) = [n for n in report.notes if n.startswith("replicates:gap")]
    assert "share 26 words" in note and "leaves out 2 words" in note and "peach" in note
    # a replicate's result in the family is not its result alone: another input key
    seed0 = [r for r in report.results if r.fingerprint == r_alone.fingerprint][0]
    assert seed0.input_key != r_alone.input_key and seed0.effect_size != r_alone.effect_size
    # the command line says it in one line on stderr
    from stimkit.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--db", str(root / "vocab.duckdb"), "test", "--name", "fruit-soft", "-e", "replicates:gap", "-q",
              "--wordlist-dir", str(root / "wl"), "--budget", "500", "--x", SETS["x"], "--y", SETS["y"], "--a", SETS["a"],
              "--b", SETS["b"], "--replicate", f"gap=vectors:{files['seed-0']}", "--replicate",
              f"gap=vectors:{files['gappy']}", "-f", "csv"])
    assert e.value.code in (0, None)
    err = capsys.readouterr().err
    assert err.count("share 26 words") == 1
    store.close()


def test_family_of_one_and_unknown_family_are_refused_store_unchanged(study, capsys):
    root, files = study
    store = open_store(root, "refused.duckdb")
    store.test(name="fruit-soft", encoders=[f"vectors:{files['seed-0']}"], budget=200, **SETS)
    before = counts(store)
    with pytest.raises(InputError, match="a family of 1 replicate"):
        store.test(name="fruit-soft", encoders=["replicates:one"], replicates={"one": [f"vectors:{files['seed-0']}"]},
                   budget=200, **SETS)
    with pytest.raises(UsageError, match="no family 'nope'"):
        store.test(name="fruit-soft", encoders=["replicates:nope"], budget=200, **SETS)
    with pytest.raises(InputError, match="allows no reliability coefficient"):   # one result: nothing to compute on
        store.reliability()
    assert counts(store) == before
    store.close()
    from stimkit.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--db", str(root / "refused.duckdb"), "test", "--name", "fruit-soft", "-e", "replicates:one",
              "--replicate", f"one=vectors:{files['seed-0']}", "--wordlist-dir", str(root / "wl"),
              "--x", SETS["x"], "--y", SETS["y"], "--a", SETS["a"], "--b", SETS["b"]])
    assert e.value.code == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "a family of 1 replicate" in lines[0]
    with stimkit.open(root / "refused.duckdb") as again:
        assert counts(again) == before


def _items(store, result_ids):
    """result id -> {(role, word): s(w)}, read straight from result_items."""
    out = {}
    for rid, role, word, s in store.con.execute(
            "SELECT result_id, role, word, association FROM result_items WHERE result_id IN (SELECT unnest(?)) "
            "AND role IN ('X', 'Y') AND association IS NOT NULL", [result_ids]).fetchall():
        out.setdefault(rid, {})[(role, word)] = s
    return out


def test_reliability_rows_equal_pingouin_on_the_stored_scores(family_run):
    import pandas as pd
    import pingouin

    store, report, named, run_id, df = family_run
    rows = {(r["measure"], r["coefficient"], r["role"]): r for r in df.iter_rows(named=True)}
    assert store.con.execute("SELECT count(*) FROM reliability_results WHERE run_id = ?", [run_id]).fetchone()[0] == len(rows)
    members = store.con.execute("SELECT result_id, kind FROM replicate_members WHERE summary_id = ? ORDER BY result_id",
                                [report.summaries[0].summary_id]).fetchall()
    items = _items(store, [m[0] for m in members])

    # test-retest: words x seeds
    seeds = [rid for rid, kind in members if kind == "seed"]
    keys = sorted(items[seeds[0]])
    long = pd.DataFrame([(str(k), s, items[s][k]) for k in keys for s in seeds], columns=["word", "seed", "score"])
    icc = pingouin.intraclass_corr(long, targets="word", raters="seed", ratings="score").set_index("Type")
    # pingouin's names: ICC(A,1) absolute agreement, two-way random = Shrout & Fleiss's ICC(2,1); ICC(C,1) = ICC(3,1)
    for coefficient, kind in (("ICC(2,1)", "ICC(A,1)"), ("ICC(2,k)", "ICC(A,k)")):
        row = rows[("test-retest", coefficient, None)]
        assert row["value"] == pytest.approx(icc.loc[kind, "ICC"], abs=1e-10)
        assert (row["n_subjects"], row["n_raters"]) == (16, 4)
        assert row["ci_low"] < row["value"] < row["ci_high"]
        assert sorted(row["result_ids"]) == sorted(seeds)

    # internal consistency: results (all seven replicates) x the words of X
    everyone = [rid for rid, _ in members]
    words = sorted(w for (role, w) in items[everyone[0]] if role == "X")
    wide = pd.DataFrame([[items[r][("X", w)] for w in words] for r in everyone], columns=words)
    alpha, ci = pingouin.cronbach_alpha(wide)
    row = rows[("internal", "alpha", "X")]
    assert row["value"] == pytest.approx(alpha, abs=1e-10) and row["n_subjects"] == 7 and row["n_raters"] == 8
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(ci), abs=1e-3)   # pingouin rounds to 3 places
    from stimkit.stats.reliability import split_half_items

    # 8 words, C(8, 4) / 2 = 35 splits: every one, so the value is the function's on the same table
    half = split_half_items(wide.to_numpy())
    assert half.exhaustive
    row = rows[("internal", "split-half", "X")]
    assert (row["value"], row["ci_low"], row["ci_high"]) == pytest.approx((half.value, half.ci_low, half.ci_high), abs=1e-12)

    # inter-rater: results x metrics, each oriented (all three are signed) and standardised
    values = store.con.execute("""SELECT regexp_replace(result_id, '/(rnd|semaxis)$', ''), coalesce(metric, 'weat'),
                                         CASE WHEN coalesce(metric, 'weat') = 'weat' THEN effect_size ELSE statistic END
                                  FROM results WHERE run_id = ?""", [report.run_id]).fetchall()
    table = pd.DataFrame(values, columns=["subject", "metric", "value"])
    table["value"] = table.groupby("metric")["value"].transform(lambda v: (v - v.mean()) / v.std(ddof=1))
    icc3 = pingouin.intraclass_corr(table, targets="subject", raters="metric", ratings="value").set_index("Type")
    row = rows[("inter-rater", "ICC(3,1)", None)]
    assert row["value"] == pytest.approx(icc3.loc["ICC(C,1)", "ICC"], abs=1e-10)
    assert (row["n_subjects"], row["n_raters"]) == (7, 3)


def test_report_draws_every_replicate(family_run):
    """The report's figure plots each replicate's stored d once (seeds and bootstrap samples apart)."""
    from stimkit.report import data as report_data, figures

    store, report, _, _, _ = family_run
    members = report_data.replicate_members(store.con)
    assert members.height == 7 and set(members["kind"]) == {"seed", "boot"}
    fig = figures.replicate_strip(members)
    drawn = sorted(float(x) for line in fig.axes[0].lines if line.get_marker() in ("o", "^") for x in line.get_xdata())
    stored = sorted(r.effect_size for r in report.results if r.metric == "weat")
    assert drawn == pytest.approx(stored, abs=1e-12)
    seeds = [line for line in fig.axes[0].lines if line.get_marker() == "o"]
    assert sum(len(line.get_xdata()) for line in seeds) == 4


def test_a_study_runs_its_replicates_table_and_status_knows_it(study):
    """A study's [replicates] family runs as `replicates:NAME`; a second run reuses every member
    (status: current) and makes no second summary."""
    root, files = study
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "fruit.toml").write_text('["fruit-soft"]\nsets = ' + repr(list(SETS.values())).replace("'", '"')
                                               + "\n", encoding="utf-8")
    members = ", ".join(f'"vectors:{files[k]}"' for k in ("seed-0", "seed-1", "boot-0"))
    (root / "study.toml").write_text(f'name = "fruit"\ntests = ["fruit-soft"]\nencoders = ["replicates:fr"]\n'
                                     f'wordlists = "wl"\ncatalog = "tests"\n[options]\nbudget = 500\n'
                                     f'[replicates]\nfr = [{members}]\n', encoding="utf-8")
    with stimkit.open(root / "study.duckdb") as store:
        job = store.run(root / "study.toml")
        (summary,) = job.run.summaries
        assert (summary.encoder, summary.n_replicates, summary.n_seed, summary.n_boot) == ("replicates:fr", 3, 2, 1)
        rows = store.status(root / "study.toml")
        assert [r.state for r in rows if r.kind == "result"] == ["current"] * 3
        again = store.run(root / "study.toml")
        assert not again.run.computed and again.run.summaries == []
        assert store.replicate_summaries().height == 1
