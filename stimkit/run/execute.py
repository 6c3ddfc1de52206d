"""Execute a plan: every (test, encoder) pair and every WEFAT in one run, all or nothing."""

from __future__ import annotations

import re

from .. import store
from ..errors import StimkitError, first_line
from . import association, baseline, diagnose, wefat
from .plan import Plan
from .rows import Failure, FailureRow, RunReport


def execute(con, plan: Plan, command: str, on_result=None, on_failure=None, failed: list[Failure] = (),
            study: dict | None = None) -> RunReport:
    """Run the plan's pairs (and WEFATs) in one run. A pair that fails with a StimkitError
    (meaningless input: degenerate vectors, no vector for a set) is reported and skipped; the
    others are stored. A crash leaves no partial run.

    on_result(event) after each result, with what a progress line shows (rows.ResultEvent;
    all are stored at the end, in one append per table, inside the run's transaction); on_failure(failure) for each
    failure: the plan's refusals and `failed` (encoders that could not encode) first.
    study: the study's name, alpha and correction, recorded on the run."""
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
    total = sum(len(p.options.metrics) for p, _ in plan.pairs) + len(plan.wefats)
    fresh = [b for b in plan.baselines if b.draws is not None]
    # stored already: reused, its rate of rejections read from its draws at this run's alpha
    report.baselines.extend(baseline.at_alpha(con, b.stored, b.planned.options.alpha)
                            for b in plan.baselines if b.draws is None)
    report.reused.extend(b.baseline_id for b in plan.baselines if b.draws is None)
    if not total and not fresh:
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
        if report.results or report.wefats or len(report.baselines) > len(report.reused):
            report.run_id = run_id
            store.insert(con, "run_failures", [FailureRow(run_id, f.test, f.encoder, f.cause) for f in failures])
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
