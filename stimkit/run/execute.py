"""Execute a plan: every (test, encoder) pair and every WEFAT in one run, all or nothing."""

from __future__ import annotations

import re

from .. import store
from ..errors import StimkitError, first_line
from . import association, wefat
from .plan import Plan
from .rows import Failure, RunReport


def execute(con, plan: Plan, command: str, on_result=None, on_failure=None, failed: list[Failure] = (),
            study: dict | None = None) -> RunReport:
    """Run the plan's pairs (and WEFATs) in one run. A pair that fails with a StimkitError
    (meaningless input: degenerate vectors, no vector for a set) is reported and skipped; the
    others are stored. A crash leaves no partial run.

    on_result(result, done, total) after each stored result; on_failure(failure) for each
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
    if not total:
        return report
    with store.transaction(con):
        run_id = store.start_run(con, command, plan.options.seed, **(study or {}))
        for planned, enc in plan.pairs:
            try:
                found = association.run_one(con, run_id, planned, enc, planned.options, reference=plan.reference)
            except StimkitError as e:
                fail(planned.name, getattr(enc, "base_spec", enc.spec), e)
                continue
            for res in found:
                report.results.append(res)
                if on_result:
                    on_result(res, len(report.results) + len(failures), total)
        for planned, enc in plan.wefats:
            try:
                report.wefats.append(wefat.run_one(con, run_id, planned, enc, plan.wefat_options))
            except StimkitError as e:
                fail(planned.wefat.name, enc.spec, e)
        if report.results or report.wefats:
            report.run_id = run_id
        else:
            con.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
    return report
