"""Execute a plan: every (test, encoder) pair and every WEFAT in one run, all or nothing."""

from __future__ import annotations

import re

from .. import store
from ..errors import StimkitError, first_line
from . import association, baseline, diagnose, wefat
from .plan import Plan
from .rows import Failure, FailureRow, RunReport


def reusable(con, plan: Plan) -> dict[int, list[str]]:
    """The pairs of the plan whose results are stored under today's input key (association.
    result_key: same test by role, set versions, encoder, procedure and stimkit version), by
    pair index: the stored results of the latest run that made them, none retired."""
    keys = {i: association.result_key(p, enc, p.options) for i, (p, enc) in enumerate(plan.pairs)}
    wanted = sorted({k for k in keys.values() if k})
    if not wanted:
        return {}
    found: dict[str, list[str]] = {}
    for key, ids in store.rows(con, """
            SELECT input_key, list(result_id ORDER BY result_id) FROM (
                SELECT input_key, result_id, run_id, max(run_id) OVER (PARTITION BY input_key) AS newest
                FROM results WHERE input_key IN (SELECT unnest(?)) AND coalesce(kind, 'test') = 'test'
                  AND result_id NOT IN (SELECT result_id FROM result_retirements))
            WHERE run_id = newest GROUP BY input_key""", [wanted]):
        found[key] = list(ids)
    return {i: found[k] for i, k in keys.items() if k in found}


def members(con, run_id: str) -> set[str]:
    """The results a study's run is made of (run_results)."""
    return {r for (r,) in store.rows(con, "SELECT result_id FROM run_results WHERE run_id = ?", [run_id])}


def execute(con, plan: Plan, command: str, on_result=None, on_failure=None, failed: list[Failure] = (),
            study: dict | None = None, reused: list[str] = (), family: bool = False, then=None) -> RunReport:
    """Run the plan's pairs (and WEFATs) in one run. A pair that fails with a StimkitError
    (meaningless input: degenerate vectors, no vector for a set) is reported and skipped; the
    others are stored. A crash leaves no partial run.

    on_result(event) after each result, with what a progress line shows (rows.ResultEvent;
    all are stored at the end, in one append per table, inside the run's transaction); on_failure(failure) for each
    failure: the plan's refusals and `failed` (encoders that could not encode) first.
    study: the study's name, alpha and correction, recorded on the run. family: the run is the
    study's (`Store.run`): the results it is made of are recorded (run_results), its family.
    reused: stored results of pairs the caller took out of the plan because their input keys are
    unchanged (`reusable`); they join the run's members. A
    study run that would compute nothing and whose members are those of the study's latest
    run makes no new run: its report names that run and says nothing was computed.
    then(con, run_id, report): more rows of the run, written in its transaction (a replicate
    family's summaries, run.replicates)."""
    failures: list[Failure] = []

    def fail(test, enc, e):
        cause = e if isinstance(e, str) else first_line(e)
        cause = re.sub(r"^test '[^']*'(, encoder '[^']*')?: ", "", cause)  # the failure line names them already
        f = Failure(test, enc, cause, None if isinstance(e, str) else e)
        failures.append(f)
        if on_failure:
            on_failure(f)

    for f in [*plan.refused, *failed]:
        fail(f.test, f.encoder, f.cause)
    report = RunReport(None, [], failures, plan.options.alpha, plan.n_tests, plan.n_encoders, notes=list(plan.notes))
    report.reused_results = list(reused)
    total = sum(len(p.options.metrics) for p, _ in plan.pairs) + len(plan.wefats)
    fresh = [b for b in plan.baselines if b.draws is not None]
    # stored already: reused, its rate of rejections read from its draws at this run's alpha
    report.baselines.extend(baseline.at_alpha(con, b.stored, b.planned.options.alpha)
                            for b in plan.baselines if b.draws is None)
    report.reused.extend(b.baseline_id for b in plan.baselines if b.draws is None)
    if not total and not fresh:
        if not family or not report.reused_results:
            return report
        last = store.latest_study_run(con, study["study"])
        if last is not None and members(con, last) == set(report.reused_results):
            report.run_id, report.computed = last, False  # nothing changed: the study's latest run stands
            return report
    with store.transaction(con):
        run_id = store.start_run(con, command, plan.options.seed, **(study or {}))
        pending: list = []  # the run's results, written in one append per table after the last
        for planned, enc in plan.pairs:
            try:
                found = association.run_one(con, run_id, planned, enc, planned.options, reference=plan.reference,
                                            pending=pending)
            except StimkitError as e:
                fail(planned.name, getattr(enc, "base_spec", enc.spec), e)
                continue
            for warning in diagnose.warnings(found[0]) if found else []:
                if warning not in report.warnings:  # a frequency gap is the words', said once a test
                    report.warnings.append(warning)
            for res in found:
                report.results.append(res)
                if on_result:
                    on_result(res.event(len(report.results) + len(failures), total))
        association.write(con, pending)
        for planned, enc in plan.wefats:
            try:
                report.wefats.append(wefat.run_one(con, run_id, planned, enc, plan.wefat_options))
            except StimkitError as e:
                fail(planned.wefat.name, enc.spec, e)
        for b in fresh:
            again = baseline.stored(con, b.baseline_id)
            if again is not None:  # another command stored it while this one encoded (the file was free)
                report.baselines.append(again)
                report.reused.append(b.baseline_id)
                continue
            try:
                row = baseline.execute_one(con, run_id, b, reference=plan.reference)
                baseline.write(con, row)
                report.baselines.append(row)
            except StimkitError as e:
                fail(b.planned.name, getattr(b.encoder, "base_spec", b.encoder.spec), f"baseline: {first_line(e)}")
        if report.results or report.wefats or len(report.baselines) > len(report.reused) or \
                (family and report.reused_results):
            report.run_id = run_id
            if then is not None:
                then(con, run_id, report)
            store.insert(con, "run_failures", [FailureRow(run_id, f.test, f.encoder, f.cause) for f in failures])
            if family:  # the study's family: what it computed and what it reused
                ids = [r.result_id for r in report.results] + report.reused_results
                store.insert(con, "run_results", [{"run_id": run_id, "result_id": r} for r in dict.fromkeys(ids)])
        else:
            con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
    report.notes += shared_vector_notes(report.results)
    return report


def shared_vector_notes(results) -> list[str]:
    """One warning per encoder that gave different words one vector in some tests."""
    found: dict[str, list] = {}
    for r in results:
        if r.n_shared_vectors and r.metric == "weat":
            found.setdefault(r.encoder, []).append(r)
    notes = []
    for encoder, hit in found.items():
        worst = max(hit, key=lambda r: r.n_shared_vectors / (r.n_x + r.n_y + r.n_a + r.n_b))
        notes.append(f"warning: {encoder} gives different words one vector in {len(hit)} test"
                     f"{'s' if len(hit) != 1 else ''} (most in {worst.test}: {worst.n_shared_vectors} of "
                     f"{worst.n_x + worst.n_y + worst.n_a + worst.n_b} stimuli): it cannot tell them apart (words it has "
                     "no pieces for?); their d measures little. See n_shared_vectors in `stimkit results --wide`.")
    return notes
