"""Correction families over the results (which results count, each hypothesis once), the
corrections (SQL in queries/), and named queries."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from .. import store
from ..choices import CORRECTIONS, RESULT_KINDS as KINDS, check_alpha, check_correction  # noqa: F401  (re-exported)
from ..paths import data_dir
from ..errors import InputError, UsageError
from ..plain import Rows
from ..store import usersql

if TYPE_CHECKING:
    import polars as pl

HYPOTHESIS = ("test, encoder fingerprint, context, alternative, balance, units (sentences or words), p-value procedure, "
              "set versions, metric, centring")
DEFAULT_ALPHA, DEFAULT_CORRECTION = 0.01, "holm"  # where neither the user nor the family's study says


@dataclass(frozen=True)
class Family:
    """The hypotheses one correction or check is over: each counted once."""
    definition: str
    m: int
    run: str | None = None
    where: str | None = None
    stale: int = 0          # hypotheses left out because their set versions were superseded
    mixed: tuple[str, ...] = ()  # tests whose results in the family ran on different set versions
    alpha: float = DEFAULT_ALPHA
    correction: str = DEFAULT_CORRECTION
    settings: str = ""      # where alpha and the correction came from: given, a study's, or the defaults
    alternatives: tuple[tuple[str, int], ...] = ()  # (alternative, results) in the family
    units: tuple[tuple[str, str, int], ...] = ()    # (word | sentence test, units, results)
    outside: int = 0        # current results of the store outside a study's family (not counted in m)
    drift: tuple[str, ...] = ()  # a study's sets whose files changed since they were made (stimuli.current)

    def as_dict(self) -> dict:
        return {"definition": self.definition, "m": self.m, "run": self.run, "where": self.where,
                "stale_left_out": self.stale, "mixed_versions": list(self.mixed), "alpha": self.alpha,
                "correction": self.correction, "settings": self.settings, "outside_study": self.outside,
                "sets_out_of_date": list(self.drift),
                "alternatives": dict(self.alternatives), "tested": self.tested,
                "units": [{"tests": kind, "units": units, "results": n} for kind, units, n in self.units]}

    @property
    def tested(self) -> str:
        """What was tested, for a legend or caption: the alternative and the units of inference."""
        sides = {"greater": "greater (one-sided)", "less": "less (one-sided)", "two-sided": "two-sided"}
        if len(self.alternatives) == 1:
            alternative = "alternative " + sides.get(self.alternatives[0][0], self.alternatives[0][0])
        else:
            alternative = "alternatives " + ", ".join(f"{sides.get(a, a)} {n}" for a, n in self.alternatives)
        parts = []
        for kind in ("word", "sentence"):
            found = [(u, n) for k, u, n in self.units if k == kind]
            total = sum(n for _, n in found)
            if len(found) == 1:
                parts.append(f"{found[0][0]} in the {total} {kind}-test result{'s' if total != 1 else ''}")
            elif found:
                parts.append(", ".join(f"{u} in {n}" for u, n in found) + f" of the {total} {kind}-test results")
        return f"{alternative}; units: {'; '.join(parts) or 'none'}"

    @property
    def mixed_note(self) -> str | None:
        if not self.mixed:
            return None
        names = ", ".join(self.mixed[:5]) + (", ..." if len(self.mixed) > 5 else "")
        return (f"{len(self.mixed)} test{'s' if len(self.mixed) != 1 else ''} compared across different set versions "
                f"(their encoders did not all run on the same stimuli): {names}")

    @property
    def drift_note(self) -> str | None:
        if not self.drift:
            return None
        names = ", ".join(self.drift[:4]) + (", ..." if len(self.drift) > 4 else "")
        return (f"warning: the study's files changed since its results were made: {len(self.drift)} set"
                f"{'s' if len(self.drift) != 1 else ''} out of date ({names}); `stimkit status` lists what changes, "
                "`stimkit run` brings it up to date")

    @property
    def outside_note(self) -> str | None:
        n = self.outside
        return (f"{n} other result{'s' if n != 1 else ''} in this store (not of the study's latest run) left out of "
                "m: --whole-store counts them" if n else None)

    @property
    def stale_note(self) -> str | None:
        n = self.stale
        return (f"{n} result{'s' if n != 1 else ''} on superseded set versions left out (--include-stale shows them)"
                if n else None)


@dataclass(frozen=True)
class FamilyRows(Rows):
    """Rows read over a family (plain.Rows, no polars frame: what `stimkit results` prints), with
    the family they were read over (`.family`), as analysis.frame.FamilyFrame carries it."""

    family: Family | None = None


def latest_run(con) -> str | None:
    row = store.one(con, "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1")
    return row[0] if row else None


# p as the queries print it: `<= floor` when p is the smallest its procedure can give (views.text.p_text).
PTEXT = ("CREATE OR REPLACE TEMP MACRO ptext(p, floor) AS CASE WHEN p IS NULL THEN 'n/a' "
         "WHEN floor IS NOT NULL AND p <= floor * (1 + 1e-9) THEN '<= ' || printf('%.2g', floor) "
         "ELSE printf('%.2g', p) END")
# d as the queries print it: with its 95% interval where one was computed
DTEXT = ("CREATE OR REPLACE TEMP MACRO dtext(d, lo, hi) AS printf('%+.2f', d) "
         "|| CASE WHEN lo IS NOT NULL AND hi IS NOT NULL THEN printf(' [%.2f, %.2f]', lo, hi) ELSE '' END")


# `^` after a p significant only with sentences as units (at alpha, no correction): `check`'s mark
UMARK = ("CREATE OR REPLACE TEMP MACRO umark(p, pw, units) AS CASE WHEN units = 'sentences' AND p <= getvariable('alpha') "
         "AND pw > getvariable('alpha') THEN '^' ELSE '' END")


def define_family(con, where: str | None = None, alpha: float | None = None, run: str | None = None,
                  allow_empty: bool = False, include_stale: bool = False, kind: str = "test",
                  values: bool = False, correct: str | None = None,
                  baseline: tuple[int, int] | None = None, study: tuple[str, float, str] | None = None,
                  whole_store: bool = False) -> Family:
    """(Re)define the temp view `family` that the analysis queries read.

    Default: the latest result of each hypothesis the user tested (kind 'test': not the
    per-template results of audits), on current set versions, not retired, over the whole
    store (view `latest_results`), so replicates never add to m. `run`: one run's results
    ('latest' for the newest run), again one row per hypothesis. `include_stale`: results on
    superseded set versions too. `kind`: audit or compare results instead (or all).
    `values`: also metric results without a p-value (for comparing metrics; never corrected).
    `where`: an SQL condition that filters the family (checked to be part of a single SELECT).
    `study` with no `run`: the study's family, its latest run's members (computed or reused
    unchanged, db/024), once the store has a run of it; the other current results of the store
    are counted apart (Family.outside) and change no m unless `whole_store`.
    `baseline`: (K, seed) of the study's matched baselines, read first where a result has one
    of them (db/019); None: the largest K, then the latest.
    `alpha`, `correct`: None takes the study's in force (`study`: its name, alpha and
    correction, as the user's study file gives them), else the family's study's (every result
    from runs of studies agreeing on them), else DEFAULT_ALPHA and DEFAULT_CORRECTION;
    Family.settings says which.

    The view's p_value is the p with whole words as units (p_words) while the variable
    `word_units` is true: `corrected` runs the same correction over both."""
    if alpha is not None:
        check_alpha(alpha)
    if correct is not None:
        check_correction(correct)
    if kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    conditions = ["NOT retired"] + ([] if values else ["p_value IS NOT NULL"])
    if kind != "all":
        conditions.append(f"coalesce(kind, 'test') = '{kind}'")
    study_run = None
    if run is None and study is not None and not whole_store and kind == "test":
        study_run = store.latest_study_run(con, study[0])  # the study's family: its latest run's members
    if run is not None or study_run is not None:
        run_id = study_run or (latest_run(con) if run == "latest" else run)
        if run_id is None or not store.one(con, "SELECT 1 FROM runs WHERE run_id = ?", [run_id]):
            raise UsageError(f"--run {run}: no such run" + ("" if run_id else " (the store has no runs)"))
        con.execute("SET VARIABLE family_run = ?", [run_id])
        # a run's results: those it computed, and those a study's run reused unchanged (run_results)
        conditions.append("(run_id = getvariable('family_run') OR result_id IN "
                          "(SELECT result_id FROM run_results WHERE run_id = getvariable('family_run')))")
        scope = f"of study {study[0]} (its latest run, {run_id})" if study_run else f"in run {run_id}"
    else:
        run_id, scope = None, "over the whole store"
    current = " AND ".join(conditions + ["NOT stale"])
    chosen = current if not include_stale else " AND ".join(conditions)
    base = (f"SELECT * FROM result_hypotheses WHERE {chosen} QUALIFY row_number() OVER "
            "(PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1")
    # d read against its matched random baseline, where one was computed (db/015: result_baselines)
    base = (f"SELECT h.*, rb.baseline_percentile, rb.baseline_fpr, rb.baseline_id AS matched_baseline FROM ({base}) h "
            "LEFT JOIN result_baselines rb USING (result_id)")
    # the units a side: distinct target words (a sentence test's unit when words are its units)
    base = (f"SELECT b.*, w.words_x, w.words_y FROM ({base}) b LEFT JOIN (SELECT result_id, "
            "count(DISTINCT word) FILTER (WHERE role = 'X') AS words_x, count(DISTINCT word) FILTER (WHERE role = 'Y') "
            "AS words_y FROM result_items WHERE role IN ('X', 'Y') AND dropped IS NULL GROUP BY result_id) w "
            "USING (result_id)")
    # Held once in a temp table (memory only: a read-only store allows it): a reading queries the
    # family ten times or so, and each of those would re-run the query above (tens of ms).
    con.execute(f"CREATE OR REPLACE TEMP TABLE family_latest AS {base}")
    # the share of cuts that reject, at the reading's alpha (from the cuts' stored p), not the run's
    # and so the share of the matched baseline's random pairs that reject (its false-positive
    # rate), from their stored p: the temp table above was filled before the reading's alpha was set
    base = ("SELECT b.* EXCLUDE (matched_baseline) REPLACE (coalesce(c.share, b.cut_reject_share) AS cut_reject_share, "
            "CASE WHEN c.share IS NULL THEN b.cut_alpha ELSE getvariable('alpha') END AS cut_alpha, "
            "coalesce(f.fpr, b.baseline_fpr) AS baseline_fpr) "
            "FROM family_latest b LEFT JOIN (SELECT result_id, avg(CASE WHEN p_value <= getvariable('alpha') THEN 1.0 "
            "ELSE 0.0 END) AS share FROM result_cuts WHERE p_value IS NOT NULL "
            "AND result_id IN (SELECT result_id FROM family_latest) GROUP BY result_id) c USING (result_id) "
            "LEFT JOIN (SELECT baseline_id AS matched_baseline, avg(CASE WHEN p_value <= getvariable('alpha') THEN 1.0 "
            "ELSE 0.0 END) AS fpr FROM baseline_draws WHERE effect_size IS NOT NULL AND baseline_id IN "
            "(SELECT matched_baseline FROM family_latest) GROUP BY baseline_id) f USING (matched_baseline)")
    what = {"test": "", "audit": "audit ", "compare": "comparison ", "debias": "debias comparison ", "all": ""}[kind]
    definition = (f"the latest {what}result per hypothesis ({HYPOTHESIS}) {scope}"
                  + (", stale ones included" if include_stale else ""))
    sql = f"SELECT * FROM ({base}) WHERE ({where})" if where else base
    if where:
        usersql.check_select(sql, f"--where {where!r}")
        definition += f", where {where}"
    sql = (f"SELECT * REPLACE (CASE WHEN getvariable('word_units') THEN coalesce(p_words, p_value) ELSE p_value END "
           f"AS p_value) FROM ({sql})")
    try:
        con.execute(f"CREATE OR REPLACE TEMP VIEW family AS {sql}")
        con.execute(PTEXT)
        con.execute(DTEXT)
        con.execute(UMARK)
        alpha, correct, settings = study_settings(con, alpha, correct, study)
        con.execute(f"SET VARIABLE alpha = {alpha!r}")
        if baseline is not None:
            con.execute(f"SET VARIABLE baseline_k = {int(baseline[0])}")
            con.execute(f"SET VARIABLE baseline_seed = {int(baseline[1])}")
        else:
            con.execute("RESET VARIABLE baseline_k")
            con.execute("RESET VARIABLE baseline_seed")
        m = store.one(con, "SELECT count(*) FROM family")[0]
        stale = 0 if include_stale else store.one(con, f"""
            SELECT count(DISTINCT hypothesis) FROM result_hypotheses WHERE {" AND ".join(conditions)} AND stale
            {f"AND ({where})" if where else ""}""")[0]
        outside = 0 if study_run is None else store.one(con, f"""
            SELECT count(*) FROM latest_results WHERE result_id NOT IN (SELECT result_id FROM family)
            AND (run_id IS DISTINCT FROM getvariable('family_run')) AND result_id NOT IN
                (SELECT result_id FROM run_results WHERE run_id = getvariable('family_run'))
            {f"AND ({where})" if where else ""}""")[0]
        mixed = tuple(t for (t,) in store.rows(con, """
            SELECT test FROM family GROUP BY test
            HAVING count(DISTINCT array_to_string(list_sort(set_versions), ',')) > 1 ORDER BY test"""))
        alternatives = tuple(store.rows(con, "SELECT alternative, count(*) FROM family WHERE alternative IS NOT NULL "
                                             "GROUP BY 1 ORDER BY 2 DESC, 1"))
        units = tuple(store.rows(con, """
            SELECT CASE WHEN context = 'word' THEN 'word' ELSE 'sentence' END AS tests, units, count(*) FROM family
            WHERE units IS NOT NULL GROUP BY ALL ORDER BY 1 DESC, 3 DESC, 2"""))
    except duckdb.Error as e:
        raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None
    if m == 0 and not allow_empty:
        hint = (f"{outside} result{'s' if outside != 1 else ''} outside the study's family match: --whole-store reads "
                "them" if outside else "`stimkit run` brings the study's up to date") if study_run \
            else "run `stimkit test` first"
        if _has_crows(con):  # likelihood tests over CrowS pairs are not hypotheses of a family
            hint += "; CrowS results: `stimkit results crows`"
        raise InputError(f"no results in {definition} ({hint})"
                         + (f"; {stale} on superseded set versions (--include-stale)" if stale else ""))
    return Family(definition, m, run_id, where, stale, mixed, alpha, correct, settings, alternatives, units, outside)


def study_settings(con, alpha: float | None, correct: str | None,
                   study: tuple[str, float, str] | None = None) -> tuple[float, str, str]:
    """Alpha and correction for the temp view `family`: as given; where not given, the study's
    in force (`study`: name, alpha, correction); else those its runs recorded when every result
    comes from a study's run and those studies agree; else the defaults. Returns them and a
    phrase saying which applied."""
    if alpha is not None and correct is not None:
        return alpha, correct, "alpha and correction as given"
    found = [] if study is not None else store.rows(con, """
        SELECT DISTINCT u.study, u.alpha, u.correction FROM family f LEFT JOIN runs u USING (run_id)""")
    agreed = {(a, c) for _, a, c in found}
    studies = sorted({s for s, _, _ in found if s})
    if study is not None:
        name, study_alpha, study_correct = study
        source = f"of study {name}"
    elif found and len(agreed) == 1 and None not in next(iter(agreed)) and all(s for s, _, _ in found):
        (study_alpha, study_correct), = agreed
        source = f"of study {', '.join(studies)}" if len(studies) == 1 else f"of studies {', '.join(studies)}"
    else:
        study_alpha, study_correct = DEFAULT_ALPHA, DEFAULT_CORRECTION
        why = ("its results come from studies with different ones" if len(agreed) > 1 and studies
               else "its results are not all from a study's run" if found else "the family is empty")
        source = f"stimkit's defaults ({why})"
    if alpha is None and correct is None:
        return study_alpha, study_correct, f"alpha {study_alpha} and {study_correct} correction: {source}"
    if alpha is None:
        return study_alpha, correct, f"alpha {study_alpha}: {source}; {correct} correction as given"
    return alpha, study_correct, f"alpha {alpha} as given; {study_correct} correction: {source}"


# Why a stale result is left out: which of its sets changed since.
_STALE_DETAIL = """'set ' || (SELECT string_agg(DISTINCT s.name, ', ' ORDER BY s.name) FROM stimulus_sets s
                    JOIN current_sets c ON c.name = s.name AND c.version <> s.version
                    WHERE list_contains(h.set_versions, s.version))
                   || ' regenerated since (a word list or template changed): run the test again'"""


def left_out(con, where: str | None = None, failures_of: str | None = None) -> pl.DataFrame:
    """What the family (the temp view `family`: define_family first) leaves out of the tests'
    results over `where`, and why, one row per hypothesis (its latest result): `stale` (a set it
    used was regenerated since; only where no current result of the same test, encoder, context
    and metric stands in for it) or `retired` (with the reason); and, for a run (`failures_of`:
    its id), each test or encoder of that run that `failed`, with the cause. Columns test,
    encoder, context, why, detail."""
    scoped = ("SELECT * FROM result_hypotheses WHERE p_value IS NOT NULL AND coalesce(kind, 'test') = 'test' "
              "AND (retired OR stale) QUALIFY row_number() OVER "
              "(PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1")
    if where:
        scoped = f"SELECT * FROM ({scoped}) WHERE ({where})"
    sql = f"""
        SELECT h.test, h.encoder, h.context, CASE WHEN h.retired THEN 'retired' ELSE 'stale' END AS why,
               CASE WHEN h.retired THEN 'retired: ' || r.reason ELSE {_STALE_DETAIL} END AS detail
        FROM ({scoped}) h LEFT JOIN result_retirements r USING (result_id)
        WHERE h.retired OR NOT EXISTS (
            SELECT 1 FROM family f WHERE f.test = h.test AND f.fingerprint = h.fingerprint AND f.context = h.context
                                     AND coalesce(f.metric, 'weat') = coalesce(h.metric, 'weat'))"""
    if failures_of is not None:
        sql += "\nUNION ALL SELECT test, encoder, NULL, 'failed', cause FROM run_failures WHERE run_id = ?"
    try:
        return store.frame(con, f"SELECT * FROM ({sql}) ORDER BY why, test, encoder",
                           [failures_of] if failures_of is not None else None)
    except duckdb.Error as e:
        raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None


def named_query(name: str) -> str | None:
    path = data_dir("queries") / f"{name}.sql"
    return path.read_text() if re.fullmatch(r"[\w-]+", name) and path.exists() else None


def run_sql(con, sql: str) -> pl.DataFrame:
    """One of stimkit's own queries (queries/*.sql) over the temp views."""
    return usersql.read(con, sql.strip().rstrip(";"))


def corrected(con, method: str) -> pl.DataFrame:
    """The family with adjusted p-values and decisions (`corrected_relation`) as a polars frame."""
    return store.as_frame(corrected_relation(con, method))


def corrected_relation(con, method: str):
    """The family with adjusted p-values and decisions, as a relation (read it as a polars
    frame, `corrected`, or as plain.Rows); `can_reject`: whether the test could reach p <= alpha at
    all (min_p); `rejected_words`: the decision of the same correction over the p's with whole
    words as units (p_words), and `sentences_only`: rejected only with sentences as units;
    `flip_word`, `flip_role`, `flip_d`, `flip_p`: the word whose removal flips the decision at
    alpha (the one moving d most), from result_influence. Rows in the order of p, then result_id
    (the corrections' own order: each ranks by them)."""
    check_correction(method)
    if method == "none":
        sql = ("SELECT *, count(*) OVER () AS m, p_value AS p_adjusted, p_value <= getvariable('alpha') AS rejected "
               "FROM family ORDER BY p_value, result_id")
    else:
        sql = named_query(method)
    sql = sql.strip().rstrip(";")
    # The same correction with whole words as units: the family's p while `word_units` is set,
    # so held (a temp table, which a read-only store allows) before the variable is reset.
    con.execute("SET VARIABLE word_units = true")
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE family_words AS SELECT result_id, rejected AS rejected_words "
                    f"FROM ({sql})")
    finally:
        con.execute("RESET VARIABLE word_units")
    # In SQL rather than polars: a reading that prints needs no frame (a third of its start-up).
    return con.sql(f"""
        SELECT c.*, w.rejected_words, fl.flip_word, fl.flip_role, fl.flip_d, fl.flip_p,
               c.rejected AND NOT coalesce(w.rejected_words, true) AND coalesce(c.units = 'sentences', false)
                   AS sentences_only
        FROM (SELECT *, min_p IS NULL OR min_p <= getvariable('alpha') AS can_reject FROM ({sql})) c
        LEFT JOIN family_words w USING (result_id)
        LEFT JOIN (
            SELECT i.result_id, i.word AS flip_word, i.role AS flip_role, i.d_without AS flip_d, i.p_without AS flip_p
            FROM result_influence i JOIN family f USING (result_id)
            WHERE (i.p_without <= getvariable('alpha')) <> (f.p_value <= getvariable('alpha'))
            QUALIFY row_number() OVER (PARTITION BY i.result_id
                                       ORDER BY abs(i.d_without - f.effect_size) DESC NULLS LAST, i.role, i.word) = 1
        ) fl USING (result_id)
        ORDER BY c.p_value, c.result_id""")


def categories(con) -> dict[str, str]:
    """test -> "X vs Y / A vs B": the categories of each family test's four sets (from the
    stimulus sets its results used), for a table that heads its rows by them. Define the
    family first."""
    rows = store.rows(con, """
        SELECT f.test, i.role, any_value(s.category) AS category
        FROM family f JOIN (SELECT DISTINCT result_id, role, set_version FROM result_items) i USING (result_id)
        JOIN stimulus_sets s ON s.version = i.set_version
        GROUP BY f.test, i.role ORDER BY 1, 2""")
    found: dict[str, dict[str, str]] = {}
    for test, role, category in rows:
        found.setdefault(test, {})[role] = category
    return {t: f"{c['X']} vs {c['Y']} / {c['A']} vs {c['B']}" for t, c in found.items() if all(c.get(k) for k in "XYAB")}


def _has_crows(con) -> bool:
    """CrowS rows are stored (db/031; they are read by `results crows`, never in a family)."""
    found = store.one(con, "SELECT 1 FROM information_schema.tables WHERE table_name = 'crows_results'")
    return bool(found) and store.one(con, "SELECT 1 FROM crows_results LIMIT 1") is not None
