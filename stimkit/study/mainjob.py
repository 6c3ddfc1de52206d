"""The main job (`stimkit run`): May et al.'s 46 tests on the embedded encoders, Holm over
the run, Table 4, the consistency checks, and the WEFAT catalog."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from .. import DEFAULT_PAPER, encoders
from ..analysis import families as analysis
from ..catalog import tests as catalog
from ..stimuli import generate, wordlists
from ..run import runner

if TYPE_CHECKING:
    from ..api import Store

DEFAULT_ENCODERS = ["glove-6b-50d", "minilm", "minilm,pooling=cls", "use-m3"]


@dataclass
class MainJob:
    sets: list[dict]                       # generate's report
    run: runner.RunReport
    family: analysis.Family | None = None
    results: pl.DataFrame | None = None    # Holm over the run
    checks: pl.DataFrame | None = None
    wefat: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def generate_catalog(con) -> list[dict]:
    """Every set the catalog's tests use (a no-op for sets that are current)."""
    lists = wordlists.load_all()
    return generate.generate(con, catalog.default_specs(lists), lists)


def run(store: Store, encoder_specs: list[str] | None = None, opts: runner.Options | None = None, progress=None,
        on_result=None, on_failure=None) -> MainJob:
    """Generate, encode (the store open only for each append), then the statistics in one
    run; Holm over that run, its consistency checks, and the WEFAT catalog on each encoder
    that produced results."""
    from ..run import wefat

    started = time.perf_counter()
    opts = opts or runner.Options()
    opts.validate()
    sets = generate_catalog(store.con)
    specs = list(encoder_specs or DEFAULT_ENCODERS)
    tests = list(catalog.by_paper(catalog.load_toml(), DEFAULT_PAPER).values())
    wefats = list(wefat.load_catalog().values())
    store.prepare_vectors(tests, specs, opts, wefats, progress)
    report = runner.run_tests(store.con, tests, specs, opts, "run", None, on_result, on_failure)
    job = MainJob(sets, report)
    if report.run_id:
        job.results = store.results(run=report.run_id, correct="holm", alpha=opts.alpha)
        job.family = store.family
        job.checks = store.check(run=report.run_id, alpha=opts.alpha)
        ready = [encoders.resolve(s) for s in dict.fromkeys(r["encoder"] for r in report.rows)]
        job.wefat = wefat.run_catalog(store.con, ready, wefat.Options(budget=opts.budget, seed=opts.seed), report.run_id)
    job.seconds = time.perf_counter() - started
    return job
