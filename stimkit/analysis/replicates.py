"""Replicate families read over the temp view `family` (analysis.families): the summary of each
family's test whose replicates are among the family's results (what `results` shows after their
rows), and `check`'s notes on them.

One rule, the same in `results`, `check` and the report: the hypotheses are the replicates'
results (each an ordinary result, corrected with the rest); the summary under `trained:NAME` or
`replicates:NAME` is a description of them (median d, the replicates' 2.5-97.5% interval, the
share whose own test rejects at the run's alpha), with no p of its own, never counted in m.

`check` notes a family's test whose decision does not hold in most replicates (share holding
below HOLDING), or whose replicates' interval straddles 0 while some replicate rejects, and a
test-retest ICC (stats.reliability, `stimkit reliability`) below POOR_ICC.
"""

from __future__ import annotations

from .families import named_query, run_sql

HOLDING = 0.5     # the decision "holds" in most replicates: share of replicates rejecting >= this
POOR_ICC = 0.5    # Koo & Li (2016): an ICC below 0.5 is poor reliability
REPLICATES_CHECK, RETEST_CHECK = "replicates", "test-retest"


def summaries(con) -> list[dict]:
    """The latest summary of each (test, family encoder) with a member in the family, and its
    members' result ids (`member_ids`), as dicts (a reading that prints plain rows builds no frame)."""
    from .. import store

    if not store.one(con, "SELECT count(*) FROM replicate_summaries")[0]:   # most stores: no family
        return []
    cur = con.execute(named_query("family_replicates"))
    names = [c[0] for c in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _r(x) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def replicate_notes(con) -> list[dict]:
    """check's rows (consistency.COLUMNS) on the family's replicate summaries and test-retest ICCs."""
    rows = []
    for s in summaries(con):
        share, low, high = s["share_holding"], s["d_low"], s["d_high"]
        detail = (f"d {_r(s['d_median'])} [{_r(low)}, {_r(high)}] over {s['n_replicates']} replicates; "
                  + (f"p <= {s['alpha']:g} in {share:.0%}" if share is not None else "no share"))
        straddles = low is not None and high is not None and low < 0 < high
        reason = None
        if share is not None and share < HOLDING and share > 0:
            reason = f"the decision holds in {share:.0%} of replicates (under {HOLDING:.0%}): it rests on the draw"
        elif straddles and share:
            reason = "the replicates' 2.5-97.5% interval of d straddles 0 while some replicates reject"
        rows.append({"check_name": REPLICATES_CHECK, "heuristic": True, "encoder": s["encoder"], "tests": s["test"],
                     "verdict": "note" if reason else "consistent", "reason": reason, "test_used": None,
                     "diff_p": None, "detail": detail, "result_ids": list(s["member_ids"])})
    if _has_reliability(con):
        for c in run_sql(con, named_query("family_reliability")).iter_rows(named=True):
            value = c["value"]
            poor = value is not None and value < POOR_ICC
            ci = "" if c["ci_low"] is None else f" [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
            rows.append({"check_name": RETEST_CHECK, "heuristic": True, "encoder": c["scope"],
                         "tests": c["test"] or "(over tests)",
                         "verdict": "not comparable" if value is None else "note" if poor else "consistent",
                         "reason": (c["note"] or "not estimated") if value is None else
                         f"{c['coefficient']} below {POOR_ICC} (poor, Koo & Li 2016): retraining moves "
                         "the scores" if poor else None,
                         "test_used": None, "diff_p": None,
                         "detail": f"{c['coefficient']} {'n/a' if value is None else f'{value:.2f}'}{ci} over "
                                   f"{c['n_subjects']} {c['subjects']} x {c['n_raters']} {c['raters']}",
                         "result_ids": list(c["result_ids"])})
    return rows


def _has_reliability(con) -> bool:
    from .. import store

    return bool(store.one(con, "SELECT count(*) FROM reliability_results")[0])
