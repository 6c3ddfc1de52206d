"""The main job (`stimkit run`): May et al.'s 46 tests on the embedded encoders, Holm over
the run, Table 4, the consistency checks, and the WEFAT catalog."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import polars as pl

from . import DEFAULT_PAPER, analysis, catalog, encoders, generate, runner, wordlists

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


def run(con, encoder_specs: list[str] | None = None, opts: runner.Options | None = None, encode=None,
        on_result=None, on_failure=None) -> MainJob:
    from . import wefat

    started = time.perf_counter()
    opts = opts or runner.Options()
    opts.validate()
    lists = wordlists.load_all()
    sets = generate.generate(con, catalog.default_specs(lists), lists)
    specs = encoder_specs or DEFAULT_ENCODERS
    tests = list(catalog.by_paper(catalog.load_toml(), DEFAULT_PAPER).values())
    report = runner.run_tests(con, tests, specs, opts, "run", encode, on_result, on_failure)
    job = MainJob(sets, report)
    if report.run_id:
        job.family = analysis.define_family(con, None, opts.alpha, report.run_id)
        job.results = analysis.corrected(con, "holm")
        job.checks = analysis.consistency(con)
        ready = [encoders.resolve(s) for s in dict.fromkeys(r["encoder"] for r in report.rows)]
        job.wefat = wefat.run_catalog(con, ready, wefat.Options(budget=opts.budget, seed=opts.seed), report.run_id)
    job.seconds = time.perf_counter() - started
    return job
