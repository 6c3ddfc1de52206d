"""Correction families over the results (which results count, each hypothesis once), the
corrections (SQL in queries/), and named queries."""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

import duckdb

from .. import store
from ..checks import CORRECTIONS, RESULT_KINDS as KINDS, check_alpha, check_correction  # noqa: F401  (re-exported)
from ..paths import data_dir
from ..errors import InputError, UsageError
from ..store import usersql

HYPOTHESIS = "test, encoder fingerprint, context, alternative, balance, clustering, p-value procedure, set versions, metric, centring"


@dataclass(frozen=True)
class Family:
    """The hypotheses one correction or check is over: each counted once."""
    definition: str
    m: int
    run: str | None = None
    where: str | None = None
    stale: int = 0          # hypotheses left out because their set versions were superseded
    mixed: tuple[str, ...] = ()  # tests whose results in the family ran on different set versions

    def as_dict(self) -> dict:
        return {"definition": self.definition, "m": self.m, "run": self.run, "where": self.where,
                "stale_left_out": self.stale, "mixed_versions": list(self.mixed)}

    @property
    def mixed_note(self) -> str | None:
        if not self.mixed:
            return None
        names = ", ".join(self.mixed[:5]) + (", ..." if len(self.mixed) > 5 else "")
        return (f"{len(self.mixed)} test{'s' if len(self.mixed) != 1 else ''} compared across different set versions "
                f"(their encoders did not all run on the same stimuli): {names}")

    @property
    def stale_note(self) -> str | None:
        n = self.stale
        return (f"{n} result{'s' if n != 1 else ''} on superseded set versions left out (--include-stale shows them)"
                if n else None)


def latest_run(con) -> str | None:
    row = store.one(con, "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1")
    return row[0] if row else None


# p as the queries print it: `<= floor` when p is the smallest its procedure can give (output.p_text).
PTEXT = ("CREATE OR REPLACE TEMP MACRO ptext(p, floor) AS CASE WHEN p IS NULL THEN 'n/a' "
         "WHEN floor IS NOT NULL AND p <= floor * (1 + 1e-9) THEN '<= ' || printf('%.2g', floor) "
         "ELSE printf('%.2g', p) END")
# d as the queries print it: with its 95% interval where one was computed
DTEXT = ("CREATE OR REPLACE TEMP MACRO dtext(d, lo, hi) AS printf('%.2f', d) "
         "|| CASE WHEN lo IS NOT NULL AND hi IS NOT NULL THEN printf(' [%.2f, %.2f]', lo, hi) ELSE '' END")


def define_family(con, where: str | None = None, alpha: float = 0.01, run: str | None = None,
                  allow_empty: bool = False, include_stale: bool = False, kind: str = "test",
                  values: bool = False) -> Family:
    """(Re)define the temp view `family` that the analysis queries read.

    Default: the latest result of each hypothesis the user tested (kind 'test': not the
    per-template results of audits), on current set versions, not retired, over the whole
    store (view `latest_results`), so replicates never add to m. `run`: one run's results
    ('latest' for the newest run), again one row per hypothesis. `include_stale`: results on
    superseded set versions too. `kind`: audit or compare results instead (or all).
    `values`: also metric results without a p-value (for comparing metrics; never corrected).
    `where`: an SQL condition that filters the family (checked to be part of a single SELECT)."""
    alpha = check_alpha(alpha)
    if kind not in KINDS:
        raise UsageError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    conditions = ["NOT retired"] + ([] if values else ["p_value IS NOT NULL"])
    if kind != "all":
        conditions.append(f"coalesce(kind, 'test') = '{kind}'")
    if run is not None:
        run_id = latest_run(con) if run == "latest" else run
        if run_id is None or not store.one(con, "SELECT 1 FROM runs WHERE run_id = ?", [run_id]):
            raise UsageError(f"--run {run}: no such run" + ("" if run_id else " (the store has no runs)"))
        con.execute("SET VARIABLE family_run = ?", [run_id])
        conditions.append("run_id = getvariable('family_run')")
        scope = f"in run {run_id}"
    else:
        run_id, scope = None, "over the whole store"
    current = " AND ".join(conditions + ["NOT stale"])
    chosen = current if not include_stale else " AND ".join(conditions)
    base = (f"SELECT * FROM result_hypotheses WHERE {chosen} QUALIFY row_number() OVER "
            "(PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1")
    # d read against its matched random baseline, where one was computed (db/015: result_baselines)
    base = (f"SELECT h.*, rb.baseline_percentile, rb.baseline_fpr FROM ({base}) h "
            "LEFT JOIN result_baselines rb USING (result_id)")
    what = {"test": "", "audit": "audit ", "compare": "comparison ", "all": ""}[kind]
    definition = (f"the latest {what}result per hypothesis ({HYPOTHESIS}) {scope}"
                  + (", stale ones included" if include_stale else ""))
    sql = f"SELECT * FROM ({base}) WHERE ({where})" if where else base
    if where:
        usersql.check_select(sql, f"--where {where!r}")
        definition += f", where {where}"
    try:
        con.execute(f"CREATE OR REPLACE TEMP VIEW family AS {sql}")
        con.execute(PTEXT)
        con.execute(DTEXT)
        con.execute(f"SET VARIABLE alpha = {alpha!r}")
        m = store.one(con, "SELECT count(*) FROM family")[0]
        stale = 0 if include_stale else store.one(con, f"""
            SELECT count(DISTINCT hypothesis) FROM result_hypotheses WHERE {" AND ".join(conditions)} AND stale
            {f"AND ({where})" if where else ""}""")[0]
        mixed = tuple(t for (t,) in store.rows(con, """
            SELECT test FROM family GROUP BY test
            HAVING count(DISTINCT array_to_string(list_sort(set_versions), ',')) > 1 ORDER BY test"""))
    except duckdb.Error as e:
        raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None
    if m == 0 and not allow_empty:
        raise InputError(f"no results in {definition} (run `stimkit test` first)"
                         + (f"; {stale} on superseded set versions (--include-stale)" if stale else ""))
    return Family(definition, m, run_id, where, stale, mixed)


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
    """The family with adjusted p-values and decisions; `can_reject`: whether the test
    could reach p <= alpha at all (min_p)."""
    check_correction(method)
    if method == "none":
        sql = ("SELECT *, count(*) OVER () AS m, p_value AS p_adjusted, p_value <= getvariable('alpha') AS rejected "
               "FROM family ORDER BY p_value, result_id")
    else:
        sql = named_query(method)
    # In SQL rather than polars: a polars literal imports numpy, a tenth of `results`' start-up.
    # DuckDB keeps the subquery's ORDER BY through this projection.
    return run_sql(con, f"SELECT *, min_p IS NULL OR min_p <= getvariable('alpha') AS can_reject FROM ({sql.strip().rstrip(';')})")
