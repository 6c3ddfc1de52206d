"""What a report shows, read from the store through the library (read-only: temp views only)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from importlib import metadata

import polars as pl

from .. import StimkitError, UsageError, __version__, store
from ..analysis import families as analysis
from ..catalog import definitions as catalog

PACKAGES = ("duckdb", "polars", "numpy", "scipy", "torch", "transformers", "gensim", "matplotlib", "jinja2")


class NothingToReport(UsageError):
    """The store holds no results: nothing to draw (exit 2, like a command that cannot mean anything)."""


@dataclass
class ReportData:
    correction: str
    alpha: float
    where: str | None
    results: pl.DataFrame                                   # the family, corrected: one row per result
    tests: list[str]                                        # row order (catalog order first)
    encoders: list[str]
    strips: dict[str, pl.DataFrame] = field(default_factory=dict)      # test -> s(w) of X and Y per encoder
    audits: list[tuple[dict, pl.DataFrame]] = field(default_factory=list)  # audit row, its template rows
    wording: pl.DataFrame | None = None                     # wording audits: d per rewording, per test x encoder
    cuts: pl.DataFrame | None = None
    wefat: list[tuple[dict, pl.DataFrame]] = field(default_factory=list)
    consistency: pl.DataFrame | None = None
    layers: pl.DataFrame | None = None                      # layer sweeps: d (and its CI) by layer
    debias: list = field(default_factory=list)              # analysis.debias.BeforeAfter: debiased encoders and their bases
    ceat: pl.DataFrame | None = None                        # CEAT's combined effect sizes (`audit ceat`), the latest each
    debias_checks: pl.DataFrame | None = None               # checks of debiased encoders (`debias check`), the latest each
    crows: pl.DataFrame | None = None                       # CrowS-Pairs likelihood tests (run.crows), the latest each
    metrics: pl.DataFrame | None = None                     # test x encoder x metric values, when several
    provenance: dict = field(default_factory=dict)
    family: str = ""                                        # the family's definition (analysis.Family)
    source: str = ""                                        # where the table comes from (views.text.source)
    left_out: pl.DataFrame | None = None                    # results of the scope not shown, and why (families.left_out)
    baselines: list[tuple[dict, pl.DataFrame]] = field(default_factory=list)  # matched baseline, its random d
    diagnostics: pl.DataFrame | None = None                 # X's and Y's words per result: Zipf, pieces, reliability
    names: dict[str, str] = field(default_factory=dict)     # encoder -> display name (the study's, else stored)
    categories: dict[str, str] = field(default_factory=dict)  # test -> "X vs Y / A vs B" where rows are headed so
    tested: str = ""                                        # the alternative and the units (Family.tested)
    settings: str = ""                                      # where alpha and the correction came from
    pairs: list[tuple[dict, pl.DataFrame]] = field(default_factory=list)  # likelihood results, their minimal pairs
    replicates: pl.DataFrame | None = None                  # a replicate family's d per replicate, the latest summary per test
    reliability: pl.DataFrame | None = None                 # the latest `stimkit reliability` run's coefficients


def has_rows(con, table: str) -> bool:
    """Sections for tables other engineers add appear only where the table exists and has rows."""
    if not store.one(con, "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table])[0]:
        return False
    return bool(store.one(con, f"SELECT count(*) FROM {table}")[0])


def gather(con, where: str | None = None, correct: str | None = None, alpha: float | None = None,
           tests: list[str] | None = None, audits: bool = False, baseline: tuple[int, int] | None = None,
           run: str | None = None, study=None, display: dict[str, str] | None = None) -> ReportData:
    """What the report shows. `correct`, `alpha` not given: the family's study's, else holm at 0.01.
    `study` (the one whose run it shows, if any) and `display` (encoder -> name) name the table's
    source and its encoders."""
    from ..views import text

    if not has_rows(con, "results"):
        raise NothingToReport("nothing to report: run `stimkit test` first")
    family = analysis.define_family(con, where, alpha, run, correct=correct, baseline=baseline)
    correct, alpha = family.correction, family.alpha
    df = analysis.corrected(con, correct)
    order = list(catalog.load_toml())
    names = [t for t in order if t in set(df["test"])] + sorted(set(df["test"]) - set(order))
    data = ReportData(correct, alpha, where, df, names, sorted(set(df["encoder"])), family=family.definition,
                      tested=family.tested, settings=family.settings)
    data.source = text.source(study, df, catalog.load_toml())  # the caption names it
    data.names = {**text.display_names(df), **text.study_names(df["encoder"], display)}
    for t in tests or []:
        if t not in set(df["test"]):
            raise StimkitError(f"--test {t}: no result for it in the family (run `stimkit test {t}` first)")
        latest = df.filter(pl.col("test") == t).sort("created_at").unique("encoder", keep="last")  # one per encoder
        data.strips[t] = strip_items(con, latest["result_id"].to_list())
    if audits:
        data.audits = latest_audits(con, tests, alpha)
        data.wording = latest_wording(con, tests)
    if has_rows(con, "result_cuts"):
        data.cuts = cut_spread(con, df["result_id"].to_list())
    if has_rows(con, "wefat_results"):
        data.wefat = wefat(con)
    from ..analysis.consistency import consistency

    if has_rows(con, "baselines"):
        data.baselines = baselines(con, df["result_id"].to_list())
    if has_rows(con, "result_diagnostics"):
        data.diagnostics = diagnostics(con, df["result_id"].to_list())
    if has_rows(con, "result_pairs"):
        data.pairs = minimal_pairs(con, df)
    data.consistency = consistency(con, alpha)
    data.layers = layer_sweeps(df)
    from ..analysis.debias import stored_before_after

    study_name = getattr(study, "name", None)
    data.debias = stored_before_after(con, with_debias_comparisons(con, df, study_name))
    data.ceat = latest_ceat(con, study_name)
    data.debias_checks = latest_debias_checks(con, study_name)
    data.crows = latest_crows(con, study_name)
    data.metrics = metric_matrix(con, names)
    if has_rows(con, "replicate_summaries"):
        data.replicates = replicate_members(con)
    if has_rows(con, "reliability_results"):
        data.reliability = latest_reliability(con)
    data.provenance = provenance(con, df)
    return data


BEFORE_AFTER = ("result_id", "test", "encoder", "fingerprint", "effect_size", "ci_low", "ci_high", "p_value", "created_at",
                "metric", "display")


def _of_study(study: str | None) -> tuple[str, list]:
    """A condition on `runs` (alias `u`) keeping a study's runs (all runs without one)."""
    return ("u.study = ?", [study]) if study is not None else ("TRUE", [])


def with_debias_comparisons(con, df: pl.DataFrame, study: str | None) -> pl.DataFrame:
    """The family's results with `debias compare`'s (kind 'debias': in no family, shown here
    beside it), of the study's runs where the report is a study's."""
    cond, params = _of_study(study)
    found = store.frame(con, f"""
        SELECT {", ".join("r." + c for c in BEFORE_AFTER)} FROM results r JOIN runs u USING (run_id)
        WHERE r.kind = 'debias' AND {cond}""", params)
    if found.height == 0:
        return df
    keep = [c for c in BEFORE_AFTER if c in df.columns]
    return pl.concat([df.select(keep), found.select(keep)], how="vertical_relaxed")


def latest_ceat(con, study: str | None) -> pl.DataFrame | None:
    """The latest CEAT row per test, encoder and context (of the study's runs where the report is
    a study's), with its run's study and alpha."""
    if not has_rows(con, "ceat_results"):
        return None
    cond, params = _of_study(study)
    found = store.frame(con, f"""
        SELECT c.test, c.encoder, c.context, c.n_samples, c.seed, c.contexts_min, c.contexts_max, c.ces, c.ces_p,
               c.tau2, c.d, c.p_value, c.crossed_d, c.note, c.run_id, u.study, u.alpha
        FROM ceat_results c JOIN runs u USING (run_id) WHERE {cond}
        QUALIFY row_number() OVER (PARTITION BY c.test, c.fingerprint, c.context
                                   ORDER BY c.created_at DESC, c.ceat_id DESC) = 1
        ORDER BY c.test, c.encoder, c.context""", params)
    return found if found.height else None


def latest_debias_checks(con, study: str | None) -> pl.DataFrame | None:
    """The checks of each debiased encoder's latest `debias check` run (of the study's runs where
    the report is a study's)."""
    if not has_rows(con, "debias_checks"):
        return None
    cond, params = _of_study(study)
    found = store.frame(con, f"""
        WITH latest AS (SELECT d.fingerprint, max(d.run_id) AS run_id FROM debias_checks d JOIN runs u USING (run_id)
                        WHERE {cond} GROUP BY d.fingerprint)
        SELECT d.encoder, d.base, d."check", d.items, d.before, d.before_low, d.before_high, d.after, d.after_low,
               d.after_high, d.chance, d.n, d.run_id
        FROM debias_checks d JOIN latest USING (fingerprint, run_id) ORDER BY d.encoder, d.created_at""", params)
    return found if found.height else None


def latest_crows(con, study: str | None) -> pl.DataFrame | None:
    """The CrowS-Pairs rows of each test x encoder's latest run (of the study's runs where the
    report is a study's): every variant, all pairs and each direction (the bias types are in
    `stimkit results crows`)."""
    if not has_rows(con, "crows_results"):
        return None
    cond, params = _of_study(study)
    found = store.frame(con, f"""
        SELECT c.test, c.encoder, c.variant, c.split, c.n, c.wins, c.neutral, c.skipped, round(c.score, 2) AS score,
               round(c.ci_low, 2) AS ci_low, round(c.ci_high, 2) AS ci_high, c.tool, c.run_id
        FROM crows_results c JOIN runs u USING (run_id)
        WHERE {cond} AND c.split NOT LIKE 'bias:%'
        QUALIFY c.run_id = max(c.run_id) OVER (PARTITION BY c.test, c.fingerprint)
        ORDER BY c.test, c.encoder, c.variant, c.split""", params)
    return found if found.height else None


def layer_sweeps(df: pl.DataFrame) -> pl.DataFrame | None:
    """WEAT results of encoders named `...,layer=<i>` (a sweep, or single layers): d and its CI
    by layer, per test and model (the spec less its layer), where a model has two layers or more."""
    if "metric" in df.columns:
        df = df.filter(pl.col("metric").fill_null("weat") == "weat")
    swept = df.filter(pl.col("encoder").str.contains(r"(^|,)layer=\d+(,|$)")).with_columns(
        layer=pl.col("encoder").str.extract(r"(?:^|,)layer=(\d+)", 1).cast(pl.Int64),
        model=pl.col("encoder").str.replace(r",?layer=\d+", ""))
    if swept.height == 0:
        return None
    keep = swept.group_by("test", "model").agg(pl.col("layer").n_unique().alias("n")).filter(pl.col("n") > 1)
    swept = swept.join(keep.select("test", "model"), on=["test", "model"])
    return swept.select("test", "model", "layer", "effect_size", "ci_low", "ci_high", "rejected").sort("test", "model", "layer") \
        if swept.height else None


def metric_matrix(con, tests: list[str]) -> pl.DataFrame | None:
    """The latest value of every metric a test ran, per encoder (WEAT's d; the others' own
    statistic, p where the metric has a permutation null), when some test ran several metrics."""
    frame = store.frame(con, """
        SELECT test, encoder, coalesce(metric, 'weat') AS metric,
               CASE WHEN coalesce(metric, 'weat') = 'weat' THEN effect_size ELSE statistic END AS value, p_value
        FROM result_hypotheses WHERE coalesce(kind, 'test') = 'test' AND NOT stale AND NOT retired
          AND test IN (SELECT unnest(?))
        QUALIFY row_number() OVER (PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1
        ORDER BY test, encoder, metric""", [tests])
    if frame.height == 0 or frame["metric"].n_unique() < 2:
        return None
    return frame


def replicate_members(con) -> pl.DataFrame:
    """Every replicate's d and p in the latest summary of each (test, family) (run.replicates),
    with the summary's median, interval and share, and whether the replicate rejects at its alpha."""
    return store.frame(con, """
        WITH latest AS (SELECT * FROM replicate_summaries
                        QUALIFY row_number() OVER (PARTITION BY test, encoder ORDER BY created_at DESC, summary_id DESC) = 1)
        SELECT l.test, l.encoder AS family, l.d_median, l.d_low, l.d_high, l.share_holding, l.alpha, l.n_replicates,
               m.replicate, m.kind, m.k, r.effect_size, r.p_value, r.p_value <= l.alpha AS rejected
        FROM latest l JOIN replicate_members m USING (summary_id) JOIN results r USING (result_id)
        ORDER BY l.test, l.encoder, m.kind DESC, m.k""")


def latest_reliability(con) -> pl.DataFrame:
    """The coefficients of the latest `stimkit reliability` run (run.reliability)."""
    return store.frame(con, """
        SELECT measure, coefficient, scope, test, role, subjects, raters, n_subjects, n_raters, value, ci_low, ci_high, note
        FROM reliability_results WHERE run_id = (SELECT run_id FROM reliability_results
                                                 ORDER BY created_at DESC, run_id DESC LIMIT 1)
        ORDER BY measure, scope, test NULLS FIRST, role NULLS FIRST, coefficient""")


def strip_items(con, result_ids: list[str]) -> pl.DataFrame:
    """s(w) of every target stimulus that took part, with the stimulus behind it and its word
    list's category (stimulus_sets.category), which the strip plot names its rows by; and the
    categories of A and B, which name its axis."""
    return store.frame(con, """
        WITH attributes AS (
            SELECT i.result_id, any_value(s.category) FILTER (WHERE i.role = 'A') AS a_category,
                   any_value(s.category) FILTER (WHERE i.role = 'B') AS b_category
            FROM (SELECT DISTINCT result_id, role, set_version FROM result_items
                  WHERE result_id IN (SELECT unnest(?)) AND role IN ('A', 'B')) i
            JOIN stimulus_sets s ON s.version = i.set_version GROUP BY i.result_id)
        SELECT r.encoder, i.role, i.word, i.stimulus, i.association, s.category, a.a_category, a.b_category
        FROM result_items i JOIN results r USING (result_id) LEFT JOIN stimulus_sets s ON s.version = i.set_version
        LEFT JOIN attributes a USING (result_id)
        WHERE i.result_id IN (SELECT unnest(?)) AND i.role IN ('X', 'Y') AND i.dropped IS NULL
          AND i.association IS NOT NULL
        ORDER BY r.encoder, i.role, i.ordinal""", [result_ids, result_ids])


def latest_audits(con, tests: list[str] | None, alpha: float | None = None) -> list[tuple[dict, pl.DataFrame]]:
    """The latest audit per test, encoder and template set, with its per-template rows, their
    decision flips at `alpha` (the report's; None: each audit's own)."""
    from ..analysis.stored import audits_at

    if not has_rows(con, "audits"):
        return []
    audits_at(con, alpha)
    clause = "WHERE test IN (SELECT unnest(?))" if tests else ""
    rows = store.frame(con, f"""
        SELECT * FROM audits_at {clause}
        QUALIFY row_number() OVER (PARTITION BY test, encoder, template_set ORDER BY created_at DESC, audit_id DESC) = 1
        ORDER BY test, encoder, template_set""", [tests] if tests else None)
    found = []
    for a in rows.iter_rows(named=True):
        templates = store.frame(con, """
            SELECT analysis, frame, n_x, n_y, effect_size, variance, p_value, shift, decision_flip, sign_flip
            FROM audit_templates_at WHERE audit_id = ? AND effect_size IS NOT NULL ORDER BY frame, analysis""", [a["audit_id"]])
        found.append((a, templates))
    return found


def latest_wording(con, tests: list[str] | None) -> pl.DataFrame | None:
    """The latest wording audit per test and encoder, a row per variant (the original first)."""
    if not has_rows(con, "wording_audits"):
        return None
    clause = "WHERE test IN (SELECT unnest(?))" if tests else ""
    found = store.frame(con, f"""
        WITH latest AS (SELECT * FROM wording_audits {clause}
                        QUALIFY row_number() OVER (PARTITION BY test, encoder ORDER BY created_at DESC, audit_id DESC) = 1)
        SELECT a.test, a.encoder, a.verdict, a.alpha, v.variant, v.rule, v.effect_size, v.p_value, v.rel_change
        FROM wording_variants v JOIN latest a USING (audit_id)
        ORDER BY a.test, a.encoder, v.rule NULLS FIRST""", [tests] if tests else None)
    return found if found.height else None


def minimal_pairs(con, df: pl.DataFrame) -> list[tuple[dict, pl.DataFrame]]:
    """Each likelihood result of the family (run.likelihood) with its minimal pairs (result_pairs)."""
    out = []
    for r in df.filter(pl.col("context") == "minimal-pairs").to_dicts():
        pairs = store.frame(con, "SELECT * FROM result_pairs WHERE result_id = ? ORDER BY pair", [r["result_id"]])
        if pairs.height:
            out.append((r, pairs))
    return out


def cut_spread(con, result_ids: list[str]) -> pl.DataFrame:
    """Each cut's d and p; `rejected` at the family's alpha (the variable `alpha`), from the stored
    p (with no alpha set, as stored)."""
    return store.frame(con, """
        SELECT r.test, r.encoder, r.effect_size AS d_full, c.cut, c.effect_size, c.p_value,
               CASE WHEN getvariable('alpha') IS NULL OR c.p_value IS NULL THEN c.rejected
                    ELSE c.p_value <= getvariable('alpha') END AS rejected
        FROM result_cuts c JOIN results r USING (result_id)
        WHERE c.result_id IN (SELECT unnest(?)) ORDER BY r.test, r.encoder, c.cut""", [result_ids])


def baselines(con, result_ids: list[str]) -> list[tuple[dict, pl.DataFrame]]:
    """Each family result's matched random baseline (result_baselines: the study's K where the
    family was defined with it, else the largest K) with its random d, at the family's alpha."""
    rows = store.frame(con, """
        SELECT r.test, r.encoder, r.effect_size AS d, rb.baseline_percentile, rb.baseline_fpr, b.*
        FROM family r JOIN result_baselines rb USING (result_id) JOIN baselines b USING (baseline_id)
        WHERE r.result_id IN (SELECT unnest(?)) ORDER BY r.test, r.encoder""", [result_ids])
    return [(r, store.frame(con, "SELECT effect_size FROM baseline_draws WHERE baseline_id = ? AND effect_size IS NOT NULL "
                                 "ORDER BY draw", [r["baseline_id"]])) for r in rows.iter_rows(named=True)]


def diagnostics(con, result_ids: list[str]) -> pl.DataFrame:
    """X's and Y's words of each family result: Zipf mean and SD, subword count or OOV share, reliability."""
    return store.frame(con, """
        SELECT r.test, r.encoder, d.role, d.n_words, d.zipf_mean, d.zipf_sd, d.pieces_mean, d.oov_share, d.reliability
        FROM family r JOIN result_diagnostics d USING (result_id)
        WHERE r.result_id IN (SELECT unnest(?)) ORDER BY r.test, r.encoder, d.role""", [result_ids])


def wefat(con) -> list[tuple[dict, pl.DataFrame]]:
    """The latest WEFAT result per name and encoder (result ids start with their run id, a timestamp)."""
    rows = store.frame(con, """
        SELECT * FROM wefat_results
        QUALIFY row_number() OVER (PARTITION BY name, encoder ORDER BY result_id DESC) = 1 ORDER BY name, encoder""")
    return [(r, store.frame(con, "SELECT word, association, property FROM wefat_items WHERE result_id = ? ORDER BY word",
                            [r["result_id"]])) for r in rows.iter_rows(named=True)]


def rerun_command(r: dict, versions: dict[str, list[str]] | None = None) -> str:
    """The `stimkit test` line that reproduces a result: the same stimuli (each role's set
    version, pinned, so a later regeneration does not change what it runs), test name (its
    seed streams and cut derive from it), encoder, seed and options. An ad-hoc line is a
    `--rerun`: it is not stored under the test's name, so the test stays as its owner defined it."""
    opts = json.loads(r["options"]) if r.get("options") else {}
    pinned = not str(r["context"]).startswith("c-word") and versions and all(len(versions.get(role, ())) == 1 for role in "XYAB")
    if pinned:
        sql = {role: f"SELECT * FROM stimuli WHERE set_version = '{versions[role][0]}' ORDER BY ordinal" for role in "XYAB"}
        argv = ["stimkit", "test", "--rerun", "--name", r["test"],
                "--context", "word" if r["context"] == "word" else "sentence",
                "--x", sql["X"], "--y", sql["Y"], "--a", sql["A"], "--b", sql["B"], "--balance", r["balance"] or "none"]
        if r.get("cut_seed") is not None:
            argv += ["--cut-seed", str(r["cut_seed"])]
    elif r["test_source"] == "catalog":
        argv = ["stimkit", "test", r["test"]] + (["--context", r["context"]] if str(r["context"]).startswith("c-word") else [])
    else:
        argv = ["stimkit", "test", "--rerun", "--name", r["test"], "--context", r["context"],
                "--x", r["x_sql"], "--y", r["y_sql"], "--a", r["a_sql"], "--b", r["b_sql"]]
    argv += ["-e", r["encoder"], "--seed", str(r["seed"]), "--budget", str(opts.get("budget", r["budget"])),
             "--method", opts.get("method", "auto"), "--alternative", r["alternative"]]
    if r.get("units") and r["context"] != "word":  # a sentence test's units: its own, stated
        argv += ["--units", r["units"]]
    elif r["clustered"]:
        argv.append("--clustered")
    if r["bootstrap"]:
        argv += ["--bootstrap", str(r["bootstrap"])]
    if opts.get("balance") and not pinned:
        argv += ["--balance", opts["balance"]]
    return shlex.join(argv)


def item_versions(con, result_ids: list[str]) -> dict[str, dict[str, list[str]]]:
    """Per result, per role (X, Y, A, B), the set versions its stimuli came from."""
    rows = store.rows(con, """
        SELECT result_id, role, list(DISTINCT set_version ORDER BY set_version) FROM result_items
        WHERE result_id IN (SELECT unnest(?)) AND set_version IS NOT NULL GROUP BY result_id, role""", [result_ids])
    found: dict[str, dict[str, list[str]]] = {}
    for result_id, role, versions in rows:
        found.setdefault(result_id, {})[role] = versions
    return found


def provenance(con, df: pl.DataFrame) -> dict:
    ids = df["result_id"].to_list()
    runs = store.frame(con, """
        SELECT run_id, started_at, command, seed, stimkit_version FROM runs
        WHERE run_id IN (SELECT DISTINCT run_id FROM results WHERE result_id IN (SELECT unnest(?))) ORDER BY started_at""", [ids])
    sets = store.frame(con, """
        WITH used AS (SELECT DISTINCT unnest(set_versions) AS version FROM results WHERE result_id IN (SELECT unnest(?)))
        SELECT s.name, u.version, s.language, s.translation, s.translated_from, s.licence, s.n_stimuli, s.created_at
        FROM used u LEFT JOIN stimulus_sets s USING (version)
        ORDER BY s.name, u.version""", [ids])
    encoders = store.frame(con, """
        SELECT spec, fingerprint, dim, details FROM encoders
        WHERE fingerprint IN (SELECT DISTINCT fingerprint FROM results WHERE result_id IN (SELECT unnest(?))) ORDER BY spec""", [ids])
    packages = {}
    for p in PACKAGES:
        try:
            packages[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            packages[p] = "not installed"
    pinned = item_versions(con, ids)
    commands = [{"test": r["test"], "encoder": r["encoder"], "result_id": r["result_id"],
                 "command": rerun_command(r, pinned.get(r["result_id"]))}
                for r in df.sort("test", "encoder").iter_rows(named=True)]
    return {"stimkit": __version__, "runs": runs, "sets": sets, "encoders": encoders,
            "packages": packages, "commands": commands}
