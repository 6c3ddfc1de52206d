"""Stored WEFAT results and template audits, read back (read-only)."""

from __future__ import annotations

import duckdb
import polars as pl

from .. import store
from ..errors import InputError
from ..store import usersql


def wefat_results(con, where: str | None = None, words: bool = False) -> pl.DataFrame:
    """Stored WEFAT results (default: the latest WEFAT run), or their per-word rows."""
    cond = where or "run_id = (SELECT run_id FROM wefat_results ORDER BY created_at DESC LIMIT 1)"
    sql = f"SELECT * FROM wefat_results WHERE {cond} ORDER BY created_at, name, encoder"
    if words:
        sql = (f"SELECT r.name, r.encoder, r.context, i.* EXCLUDE (result_id) FROM wefat_items i "
               f"JOIN ({sql}) r USING (result_id) ORDER BY r.created_at, r.name, r.encoder, i.ordinal")
    usersql.check_select(sql, f"--where {where!r}")
    try:
        return store.frame(con, sql)
    except duckdb.Error as e:  # a bad --where
        raise InputError(f"query failed: {usersql.first_line(e)} -- in: {sql}") from None


# The audits as seen at an alpha ($alpha; NULL: each audit's own): each template's decision
# flip and the audit's share of flips recomputed from the stored p's (p <= alpha, stats.decision),
# so a view shows the flips of its own alpha, never those of the alpha an audit was run at.
AUDITS_AT = """
    SELECT a.* REPLACE (coalesce($alpha, a.alpha) AS alpha,
           (SELECT avg(CASE WHEN (t.p_value <= coalesce($alpha, a.alpha)) <> (a.full_p <= coalesce($alpha, a.alpha))
                            THEN 1.0 ELSE 0.0 END)
            FROM audit_templates t WHERE t.audit_id = a.audit_id AND t.analysis = 'alone'
              AND t.effect_size IS NOT NULL AND t.p_value IS NOT NULL) AS decision_flip_share)
    FROM audits a"""
TEMPLATES_AT = """
    SELECT t.* REPLACE (CASE WHEN t.p_value IS NULL THEN NULL
                        ELSE (t.p_value <= a.alpha) <> (a.full_p <= a.alpha) END AS decision_flip)
    FROM audit_templates t JOIN audits_at a USING (audit_id)"""


def audits_at(con, alpha: float | None) -> None:
    """Temp views `audits_at` and `audit_templates_at`: the stored audits with their decision
    flips at `alpha` (None: each audit's own alpha)."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW audits_at AS {AUDITS_AT.replace('$alpha', _sql_number(alpha))}")
    con.execute(f"CREATE OR REPLACE TEMP VIEW audit_templates_at AS {TEMPLATES_AT}")


def _sql_number(alpha: float | None) -> str:
    return "NULL::DOUBLE" if alpha is None else repr(float(alpha))


def audit_summary(con, where: str | None = None, top: int = 3,
                  alpha: float | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per audit: pooled d, tau2, I2 and flip rates at `alpha` (None: the audit's own); and the
    `top` templates of each: those that flip the decision first, then those that shift d most."""
    if where:
        usersql.check_select(f"SELECT * FROM audits WHERE ({where})", f"--where {where!r}")
    clause = f"WHERE {where}" if where else ""
    audits_at(con, alpha)
    try:
        audits = store.frame(con, f"""
            SELECT audit_id, test, template_set, encoder, full_d, full_p, n_templates, pooled_d, ci_low, ci_high,
                   pi_low, pi_high, tau2, i2, decision_flip_share, sign_flip_share, alpha
            FROM audits_at {clause} ORDER BY test, encoder, template_set""")
        movers = store.frame(con, f"""
            SELECT a.test, a.template_set, a.encoder, t.frame, t.effect_size AS d_alone, t.shift,
                   t.p_value AS p_alone, t.decision_flip, t.sign_flip
            FROM audit_templates_at t JOIN audits_at a USING (audit_id)
            WHERE t.analysis = 'alone' AND t.shift IS NOT NULL {('AND ' + where) if where else ''}
            QUALIFY row_number() OVER (PARTITION BY t.audit_id
                                       ORDER BY coalesce(t.decision_flip, false) DESC, abs(t.shift) DESC) <= {int(top)}
            ORDER BY a.test, a.encoder, a.template_set, coalesce(t.decision_flip, false) DESC, abs(t.shift) DESC""")
    except duckdb.Error as e:
        raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None
    return audits, movers


def wording_summary(con, where: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per wording audit (test x encoder): variants, d and p of the original, the range of the
    relative change, flip shares, the templates' share of variance, the verdict; and per test
    the rankings of the encoders across the variants (the runs the audits selected)."""
    if where:
        usersql.check_select(f"SELECT * FROM wording_audits WHERE ({where})", f"--where {where!r}")
    clause = f"WHERE {where}" if where else ""
    try:
        audits = store.frame(con, f"""
            SELECT test, encoder, template_set, n_variants, n_dropped, original_d, original_p, rel_change_min,
                   rel_change_max, sign_flip_share, decision_flip_share, template_share, alpha, verdict, run_id
            FROM wording_audits {clause} ORDER BY run_id, test, encoder""")
        rankings = store.frame(con, f"""
            SELECT r.test, r.encoders, r.n_variants, r.mean_tau, r.keep_share, r.run_id FROM wording_rankings r
            WHERE r.run_id IN (SELECT run_id FROM wording_audits {clause}) ORDER BY r.run_id, r.test""")
    except duckdb.Error as e:
        raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None
    return audits, rankings


def wording_variants(con, where: str | None = None) -> pl.DataFrame:
    """d, p, relative change and flips of every variant of the wording audits `where` selects."""
    if where:
        usersql.check_select(f"SELECT * FROM wording_audits WHERE ({where})", f"--where {where!r}")
    try:
        return store.frame(con, f"""
            SELECT a.test, a.encoder, v.variant, v.rule, v.family, v.n_changed, v.effect_size AS d, v.p_value AS p,
                   v.rel_change, v.sign_flip, v.decision_flip, a.alpha
            FROM wording_variants v JOIN wording_audits a USING (audit_id) {('WHERE ' + where) if where else ''}
            ORDER BY a.run_id, a.test, a.encoder, v.rule NULLS FIRST""")
    except duckdb.Error as e:
        raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None


def one_original(con, audits: pl.DataFrame, wording: pl.DataFrame | None) -> tuple[pl.DataFrame,
                                                                                  pl.DataFrame | None, list[str]]:
    """`audit show`'s default view: the latest audit of each test, encoder and template set in
    each table (template audits, wording audits), so one test on one encoder shows one d and p
    of its original wording. Where the latest template audit and the latest wording audit of one
    test, encoder and set disagree on it (they ran under other procedures: seed, budget, units),
    the older is left out, and a note says so (`--where` shows any audit). Latest: by the run's
    start (run ids of one second do not sort by time)."""
    keys = ["test", "encoder", "template_set"]
    notes: list[str] = []
    started = dict(store.rows(con, "SELECT run_id, started_at FROM runs"))
    if audits.height:  # an audit's id is its result's, <run_id>/...
        audits = audits.with_columns(_run=pl.col("audit_id").str.split("/").list.first())
        audits = (audits.with_columns(_at=pl.Series([started.get(r) for r in audits["_run"]], dtype=pl.Datetime))
                  .sort("_at", "_run").unique(keys, keep="last", maintain_order=True))
    if wording is not None and wording.height:
        wording = (wording.with_columns(_at=pl.Series([started.get(r) for r in wording["run_id"]], dtype=pl.Datetime))
                   .sort("_at", "run_id").unique(keys, keep="last", maintain_order=True))
        if audits.height:
            both = audits.join(wording.select(*keys, "run_id", "original_d", "original_p", pl.col("_at").alias("_wat")),
                               on=keys)
            differ = both.filter(((pl.col("full_p") - pl.col("original_p")).abs() > 1e-12)
                                 | ((pl.col("full_d") - pl.col("original_d")).abs() > 1e-12))
            for r in differ.iter_rows(named=True):
                template_older = (r["_at"], r["_run"]) < (r["_wat"], r["run_id"])
                older, newer = ("template", "wording") if template_older else ("wording", "template")
                drop = r["_run"] if template_older else r["run_id"]
                notes.append(f"left out: the {older} audit of {r['test']} on {r['encoder']} (run {drop}) ran under "
                             f"another procedure than the newer {newer} audit (p {r['full_p']:.4g} against "
                             f"{r['original_p']:.4g}); see `audit show --where \"run_id = '{drop}'\"`")
                mine = (pl.col("test") == r["test"]) & (pl.col("encoder") == r["encoder"])
                if template_older:
                    audits = audits.filter(~((pl.col("_run") == drop) & mine))
                else:
                    wording = wording.filter(~((pl.col("run_id") == drop) & mine))
        wording = wording.drop("_at").sort(keys)
    if "_run" in audits.columns:
        audits = audits.drop("_run", "_at").sort(keys)
    return audits, wording, notes
