"""CrowS tests in a study (`tests = ["crows-pairs", ...]` in a study file): which of a study's
(CrowS test, scoring encoder) pairs are stored already under today's inputs, which `run` must
compute, and what `status` says of each.

A CrowS result's inputs are the test's import (crows_tests.version), the encoder's fingerprint,
the seed of the bootstrap and its number of resamples: rows of crows_results with all four
equal to today's are current, and `run` reuses them (the latest run that made them) instead of
scoring again, as execute.reusable reuses association results under their input key. The
CrowS rows are not members of the study's hypothesis family (docs/methods/crows-pairs.md: a
metric score with an interval, not a test with a permutation p); they are the study's by
these inputs, which is what `results crows` in a study folder reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from .. import store

COMMAND = "stimkit run"


@dataclass
class CrowsPart:
    """What a study run did with its CrowS tests: the run that computed (None: nothing was
    computed), the pairs computed and reused, and the study's rows (computed or reused)."""
    run_id: str | None
    computed: list[tuple[str, str]] = field(default_factory=list)   # (test, encoder spec)
    reused: list[tuple[str, str, str]] = field(default_factory=list)  # (test, encoder spec, run id)
    rows: pl.DataFrame | None = None


def split(con, names) -> tuple[list[str], list[str]]:
    """A study's test names: the imported CrowS tests, the others (catalog tests and patterns)."""
    from ..catalog import crows

    known = crows.tests(con)
    return [n for n in names if n in known], [n for n in names if n not in known]


def scoring(study, encoders: list, named: list[str]) -> list:
    """The study's encoders that score texts: a CrowS test runs on those (its association tests
    on all); none is a usage error naming the study and its CrowS test."""
    from ..encoders import scoring as scoring_

    chosen = [e for e in encoders if scoring_.is_scoring(e)]
    if not chosen:
        from ..errors import UsageError

        raise UsageError(f"{study.path or study.name}: test {named[0]!r} is a likelihood test: it needs a scoring "
                         "encoder among the study's (smollm2-135m, hf:PATH,score=causal or hf:PATH,score=pll)")
    return chosen


def stored_run(con, test: str, version: str, fingerprint: str, seed: int, resamples: int) -> str | None:
    """The latest run whose rows of (test, encoder) were made from these inputs, else None."""
    found = store.one(con, "SELECT max(run_id) FROM crows_results WHERE test = ? AND version = ? AND fingerprint = ? "
                           "AND seed = ? AND resamples = ?", [test, version, fingerprint, seed, resamples])
    return found[0] if found else None


def plan(con, tests: list[str], encoders: list, seed: int, resamples: int
         ) -> tuple[list[tuple[str, object]], list[tuple[str, object, str]]]:
    """(to compute: [(test, encoder)], stored: [(test, encoder, run id)])."""
    from ..catalog import crows

    versions = crows.tests(con)
    todo, reused = [], []
    for name in tests:
        for enc in encoders:
            run_id = stored_run(con, name, versions[name], enc.fingerprint, seed, resamples)
            if run_id is None:
                todo.append((name, enc))
            else:
                reused.append((name, enc, run_id))
    return todo, reused


def rows_of(con, found: list[tuple[str, str, str]]) -> pl.DataFrame:
    """The stored rows of each (test, fingerprint, run id), in run.crows.stored's order."""
    from . import crows

    frames = [crows.stored(con, run_id, test, fp) for test, fp, run_id in found]
    return pl.concat(frames, how="vertical_relaxed") if frames else None


def status(con, tests: list[str], encoders: list, seed: int, resamples: int) -> list:
    """A `stimkit status` row for each (CrowS test, encoder): current, missing or outdated (its
    import, seed or resamples changed since its latest rows on that encoder)."""
    from ..catalog import crows
    from .status import StatusRow

    versions = crows.tests(con)
    rows = []
    for name in tests:
        for enc in encoders:
            spec = getattr(enc, "base_spec", enc.spec)
            run_id = stored_run(con, name, versions[name], enc.fingerprint, seed, resamples)
            if run_id is not None:
                rows.append(StatusRow("crows", name, spec, "current", f"stored ({run_id})", None))
                continue
            last = store.one(con, "SELECT version, seed, resamples FROM crows_results WHERE test = ? AND fingerprint = ? "
                                  "ORDER BY run_id DESC LIMIT 1", [name, enc.fingerprint])
            if last is None:
                other = store.one(con, "SELECT 1 FROM crows_results WHERE test = ? AND encoder = ? LIMIT 1", [name, enc.spec])
                rows.append(StatusRow("crows", name, spec, "outdated", "the encoder changed (its fingerprint)", COMMAND)
                            if other else StatusRow("crows", name, spec, "missing", "not run yet on this encoder",
                                                    COMMAND))
                continue
            why = [w for w, moved in (("its import", last[0] != versions[name]), ("the seed", last[1] != seed),
                                      ("the resamples", last[2] != resamples)) if moved]
            rows.append(StatusRow("crows", name, spec, "outdated", f"{' and '.join(why)} changed since", COMMAND))
    return rows
