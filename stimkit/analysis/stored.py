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


def audit_summary(con, where: str | None = None, top: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per audit: pooled d, tau2, I2 and flip rates; and the `top` templates that move each test most."""
    if where:
        usersql.check_select(f"SELECT * FROM audits WHERE ({where})", f"--where {where!r}")
    clause = f"WHERE {where}" if where else ""
    try:
        audits = store.frame(con, f"""
            SELECT audit_id, test, template_set, encoder, full_d, full_p, n_templates, pooled_d, ci_low, ci_high,
                   pi_low, pi_high, tau2, i2, decision_flip_share, sign_flip_share
            FROM audits {clause} ORDER BY test, encoder, template_set""")
        movers = store.frame(con, f"""
            SELECT a.test, a.template_set, a.encoder, t.frame, t.effect_size AS d_alone, t.shift,
                   t.p_value AS p_alone, t.decision_flip, t.sign_flip
            FROM audit_templates t JOIN audits a USING (audit_id)
            WHERE t.analysis = 'alone' AND t.shift IS NOT NULL {('AND ' + where) if where else ''}
            QUALIFY row_number() OVER (PARTITION BY t.audit_id ORDER BY abs(t.shift) DESC) <= {int(top)}
            ORDER BY a.test, a.encoder, a.template_set, abs(t.shift) DESC""")
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
