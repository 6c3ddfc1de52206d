"""What today's files change for a study, from the input keys alone (`stimkit status`).

Reads only: the sets' keys (stimuli.current), then, for the tests whose sets all stand as
the files give them, the plan's (test, encoder) pairs and their result keys, looked up as
`run` looks them up (execute.reusable), and the matched baselines of the study's [baseline].
`run` makes exactly what is not current here.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import store
from ..stimuli import current

RUN = "stimkit run"


@dataclass(frozen=True)
class StatusRow:
    kind: str                # set | result | baseline | ceat | wording
    name: str                # the set's name, or the test's
    encoder: str | None      # a result's or baseline's encoder
    state: str               # current | missing | outdated
    detail: str              # what changed, or what stands
    command: str | None      # what brings it up to date (None: current)


_SET_STATES = {"current": ("current", "as its files give it"),
               "missing": ("missing", "not generated yet"),
               "outdated": ("outdated", "its word list or templates changed"),
               "restore": ("outdated", "its files give an earlier version again")}


def of_study(con, study, chosen, encoder_specs: list[str], opts, folders, families=()) -> list[StatusRow]:
    from . import plan as run_plan
    from .execute import reusable

    lists = folders.lists()
    specs = list(dict.fromkeys(s for t in chosen for s in t.set_specs()))
    sets = current.states(con, specs, lists, folders.template_set)
    rows = [StatusRow("set", st.spec.name, None, *_SET_STATES[st.status],
                      None if st.status == "current" else RUN) for st in sets]
    changed = {st.spec.name for st in sets if st.status != "current"}
    ready = []
    for t in chosen:
        moved = [s.name for s in t.set_specs() if s.name in changed]
        if moved:
            why = f"set {moved[0]} changes" + (f" (and {len(moved) - 1} more)" if len(moved) > 1 else "")
            state = "outdated" if _has_result(con, t.name) else "missing"
            for e in encoder_specs:
                rows.append(StatusRow("result", t.name, e, state, why, RUN))
                if study.baseline:
                    rows.append(StatusRow("baseline", t.name, e, state, "follows its result", RUN))
            for kind, table, command in _ANALYSES:
                for (encoder,) in store.rows(con, f"SELECT DISTINCT encoder FROM {table} WHERE test = ?", [t.name]):
                    rows.append(StatusRow(kind, t.name, encoder, "outdated", why, command.format(test=t.name)))
        else:
            ready.append(t)
    if not ready:
        return rows
    plan = run_plan.make(con, ready, encoder_specs, opts, cword_optional=True,
                         per_test=lambda t: study.options_for(t.name))
    if families:  # a replicate family's pairs read its shared words, as `run` plans them (run.replicates)
        from .replicates import restrict

        plan, _ = restrict(plan, list(families))
    for f in plan.refused:
        rows.append(StatusRow("result", f.test, None if f.encoder == "*" else f.encoder, "missing",
                              f"refused: {f.cause}", None))
    baseline = study.baseline or None
    stored = reusable(con, plan)  # the same question `run` asks before it computes a pair
    for i, (planned, enc) in enumerate(plan.pairs):
        spec = getattr(enc, "base_spec", enc.spec)
        if i not in stored:
            earlier = _has_result(con, planned.name, enc.fingerprint)
            rows.append(StatusRow("result", planned.name, spec, "outdated" if earlier else "missing",
                                  "its procedure or stimkit changed" if earlier else "not run yet", RUN))
            if baseline:
                rows.append(StatusRow("baseline", planned.name, spec, "missing", "follows its result", RUN))
            continue
        rows.append(StatusRow("result", planned.name, spec, "current", f"stored ({stored[i][0]})", None))
        rows += _analyses(con, planned, enc, spec)
        if baseline:
            k, seed = int(baseline.get("sets", 0)), int(baseline.get("seed", opts.seed))
            has = store.one(con, "SELECT baseline_id FROM baselines WHERE test = ? AND fingerprint = ? "
                                 "AND role_versions = ? AND k = ? AND seed = ? LIMIT 1",
                            [planned.name, enc.fingerprint, planned.role_versions, k, seed])
            rows.append(StatusRow("baseline", planned.name, spec, "current" if has else "missing",
                                  f"K {k}, seed {seed}" + (f" ({has[0]})" if has else ": not drawn yet"),
                                  None if has else RUN))
    return rows


# The analyses that read a test's sets and keep their rows (their latest, by test and encoder):
# out of date once the sets that played X, Y, A and B are not those today's files give.
_ANALYSES = (("ceat", "ceat_results", "stimkit audit ceat -t {test}"),
             ("wording", "wording_audits", "stimkit audit perturb -t {test}"))


def _analyses(con, planned, enc, spec: str) -> list[StatusRow]:
    rows = []
    for kind, table, command in _ANALYSES:
        found = store.one(con, f"SELECT role_versions FROM {table} WHERE test = ? AND fingerprint = ? "
                               "ORDER BY created_at DESC LIMIT 1", [planned.name, enc.fingerprint])
        if found is None:
            continue
        if found[0] == planned.role_versions:
            rows.append(StatusRow(kind, planned.name, spec, "current", "on today's sets", None))
        else:
            rows.append(StatusRow(kind, planned.name, spec, "outdated", "its sets changed since",
                                  command.format(test=planned.name)))
    return rows


def _has_result(con, test: str, fingerprint: str | None = None) -> bool:
    sql = "SELECT 1 FROM results WHERE test = ? AND coalesce(kind, 'test') = 'test'"
    return store.one(con, sql + (" AND fingerprint = ?" if fingerprint else "") + " LIMIT 1",
                     [test, fingerprint] if fingerprint else [test]) is not None
