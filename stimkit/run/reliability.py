"""The reliability of a set of stored results, in Du et al.'s (2021) terms (`stimkit reliability`):

- test-retest: ICC(2,1) and ICC(2,k) across seeds. Subjects are the test's target words (X u Y),
  raters the seed replicates (a family's seed-K members; with no family named, every encoder
  of the selection), the rating a word's s(w, A, B) as its result's items store it. A word a
  replicate dropped (out of its vocabulary) leaves the matrix: ICCs take no missing cell.
- inter-rater: ICC(3,1) across scoring rules. Subjects are the results (a test on one encoder
  or replicate) that every chosen rule scored; raters the rules (`--metric` results: d for
  weat, each metric's value for the others), each oriented so that larger means more bias in
  the test's direction (stats.metrics: ECT's rho and MAC's distance negated) and standardised
  over the subjects, since the rules' scales differ and ICC(3,1) forgives only a shift.
- internal consistency: Cronbach's alpha and split-half (Spearman-Brown) across the words of
  each target list (X, Y): the items are the list's words, the subjects the results
  (replicates or encoders) of the test, the rating a word's s(w).

The coefficients and their intervals come from stats.reliability; this module reads the
matrices from the store and writes one row per coefficient (db/034 reliability_results) under
a run of its own: `reliability` computes and stores, like `test` (it is not a read command).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .. import store
from ..errors import InputError, StimkitError, first_line

RATED = "CASE WHEN coalesce(metric, 'weat') = 'weat' THEN effect_size ELSE statistic END"


@dataclass(frozen=True)
class Coefficient:
    """One coefficient: a row of reliability_results once its run is known (rows_of)."""
    measure: str
    coefficient: str
    scope: str
    test: str | None
    role: str | None
    subjects: str
    raters: str
    n_subjects: int
    n_raters: int
    value: float | None
    ci_low: float | None
    ci_high: float | None
    ci_level: float | None
    ci_method: str | None
    result_ids: tuple[str, ...]
    note: str | None = None


def _f(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def selection(con) -> list[tuple]:
    """(result_id, test, fingerprint, metric, value) of the `family` view (analysis.families)."""
    return store.rows(con, f"SELECT result_id, test, fingerprint, coalesce(metric, 'weat'), {RATED} FROM family "
                           "ORDER BY test, fingerprint, metric")


def scores(con, result_ids: list[str]) -> dict[str, dict[tuple[str, str], float]]:
    """Each WEAT result's s(w) by (role, word) from result_items (X and Y: the items with an
    association); a word with several stimuli (a sentence test) is their mean."""
    out: dict[str, dict[tuple[str, str], float]] = {}
    for rid, role, word, value in store.rows(con, """
            SELECT result_id, role, coalesce(word, stimulus), avg(association) FROM result_items
            WHERE result_id IN (SELECT unnest(?)) AND role IN ('X', 'Y') AND association IS NOT NULL
            GROUP BY ALL ORDER BY ALL""", [result_ids]):
        out.setdefault(rid, {})[(role, word)] = float(value)
    return out


def _matrix(columns: list[dict], keys=None) -> tuple[np.ndarray, list]:
    """subjects (rows: the keys every column has) x columns."""
    shared = set.intersection(*(set(c) for c in columns)) if columns else set()
    if keys is not None:
        shared &= set(keys)
    order = sorted(shared)
    return np.array([[c[k] for c in columns] for k in order], dtype=np.float64).reshape(len(order), len(columns)), order


def test_retest(groups: dict, by_result: dict, level: float) -> list[Coefficient]:
    """groups: {(scope, test): [(result_id, kind)]}; ICC(2,1) and ICC(2,k) over the seeds."""
    from ..stats.reliability import icc

    out = []
    for (scope, test), members in groups.items():
        seeds = [r for r, kind in members if kind == "seed" and r in by_result]
        if len(seeds) < 2:
            continue
        m, words = _matrix([by_result[r] for r in seeds])
        if len(words) < 3:
            continue
        dropped = len(set().union(*(set(by_result[r]) for r in seeds))) - len(words)
        note = f"{dropped} word{'s' if dropped != 1 else ''} some seed lacks left out" if dropped else None
        for label, kind in (("ICC(2,1)", "ICC2"), ("ICC(2,k)", "ICC2k")):
            out.append(_coefficient("test-retest", label, scope, test, None, "words", "seeds", m, tuple(seeds), level,
                                    lambda: icc(m, kind, level), note, "F (McGraw & Wong)"))
    return out


def inter_rater(rows: list[tuple], scope_of, level: float) -> list[Coefficient]:
    """ICC(3,1) over the metrics every subject (test x encoder) of a scope has."""
    from ..stats.metrics import metric as metric_def
    from ..stats.reliability import icc

    by_scope: dict[str, dict[str, dict]] = {}
    ids: dict[str, list[str]] = {}
    for rid, test, fp, metric, value in rows:
        if value is None or not np.isfinite(value):
            continue
        kind = metric_def(metric).kind
        oriented = value if kind in ("signed", "magnitude") else -value
        for scope in scope_of(fp):
            by_scope.setdefault(scope, {}).setdefault(metric, {})[(test, fp)] = oriented
            ids.setdefault(scope, []).append(rid)
    out = []
    for scope, metrics in by_scope.items():
        names = sorted(metrics)
        if len(names) < 2:
            continue
        m, subjects = _matrix([metrics[n] for n in names])
        if len(subjects) < 3:
            continue
        sd = m.std(axis=0, ddof=1)
        if not (sd > 0).all():
            continue
        z = (m - m.mean(axis=0)) / sd
        out.append(_coefficient("inter-rater", "ICC(3,1)", scope, None, None, "results", "metrics", z,
                                tuple(ids[scope]), level, lambda: icc(z, "ICC3", level),
                                f"rules: {', '.join(names)} (each standardised over the results)", "F"))
    return out


def internal(groups: dict, by_result: dict, level: float, seed: int) -> list[Coefficient]:
    """Cronbach's alpha and split-half over the words of X and of Y; subjects the results."""
    from ..seeding import rng_for
    from ..stats.reliability import cronbach_alpha, split_half_items

    out = []
    for (scope, test), members in groups.items():
        results = [r for r, _ in members if r in by_result]
        if len(results) < 3:
            continue
        for role in ("X", "Y"):
            cols = [{w: v for (rl, w), v in by_result[r].items() if rl == role} for r in results]
            words = sorted(set.intersection(*(set(c) for c in cols)))
            if len(words) < 2:
                continue
            m = np.array([[c[w] for w in words] for c in cols], dtype=np.float64)   # subjects (results) x items (words)
            out.append(_coefficient("internal", "alpha", scope, test, role, "replicates", "words", m, tuple(results),
                                    level, lambda: cronbach_alpha(m, level), None, "F (Feldt)"))
            if len(words) >= 4:
                rng = rng_for(seed, "reliability", scope, test, role)
                out.append(_coefficient("internal", "split-half", scope, test, role, "replicates", "words", m,
                                        tuple(results), level, lambda: split_half_items(m, rng, level=level), None,
                                        "F (Feldt, alpha's)"))
    return out


def _coefficient(measure, coefficient, scope, test, role, subjects, raters, m, ids, level, compute, note, method):
    try:
        r = compute()
        value, low, high = _f(r.value), _f(r.ci_low), _f(r.ci_high)
    except StimkitError as e:
        value, low, high, method = None, None, None, None
        note = first_line(e) if note is None else f"{note}; {first_line(e)}"
    return Coefficient(measure, coefficient, scope, test, role, subjects, raters, m.shape[0], m.shape[1], value, low, high,
                       level if low is not None else None, method, tuple(ids), note)


def compute(con, members: dict[str, tuple[str, str]] | None, level: float, seed: int) -> list[Coefficient]:
    """Every coefficient the selection (the `family` view) allows. members: {fingerprint:
    (scope, kind)} for the families named (their seeds are test-retest's raters), None: every
    encoder of the selection is a seed of one scope, 'selection'."""
    rows = selection(con)
    if not rows:
        raise InputError("no results selected: nothing to compute reliability on (see `stimkit results`)")

    def scopes(fp):
        if members is None:
            return ["selection"]
        return [members[fp][0]] if fp in members else []

    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for rid, test, fp, metric, _ in rows:
        if metric != "weat":
            continue
        for scope in scopes(fp):
            groups.setdefault((scope, test), []).append((rid, members[fp][1] if members else "seed"))
    by_result = scores(con, [r for ms in groups.values() for r, _ in ms])
    return (test_retest(groups, by_result, level) + inter_rater(rows, scopes, level)
            + internal(groups, by_result, level, seed))


def rows_of(run_id: str, found: list[Coefficient]) -> list[dict]:
    """The coefficients as rows of reliability_results, each with its run and id."""
    return [{"reliability_id": f"{run_id}/{c.measure}/{c.coefficient}/{c.scope}/{c.test or '*'}/{c.role or '*'}",
             "run_id": run_id, **asdict(c), "result_ids": list(c.result_ids)} for c in found]


def write(con, rows: list[dict]) -> None:
    store.insert(con, "reliability_results", rows)


def stored(con, run_id: str | None = None):
    """The stored coefficients of one run (None: the latest reliability run)."""
    if run_id is None:
        found = store.one(con, "SELECT run_id FROM reliability_results ORDER BY created_at DESC, run_id DESC LIMIT 1")
        run_id = found[0] if found else None
    return store.frame(con, "SELECT * EXCLUDE (created_at) FROM reliability_results WHERE run_id = ? "
                            "ORDER BY measure, scope, test NULLS FIRST, role NULLS FIRST, coefficient", [run_id])

