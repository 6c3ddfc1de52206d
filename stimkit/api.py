"""The library's face: `weat` on arrays, and a store you open and drive from Python, as the CLI does.

    >>> import stimkit
    >>> with stimkit.open(path) as store:                              # doctest: +SKIP
    ...     store.generate()
    ...     report = store.test(["weat6", "sent-weat6"], encoders=["glove-6b-50d"])
    ...     df = store.results(correct="holm")                           # a polars DataFrame

Every command of the CLI calls one of these methods and prints what it returns.

`weat`, in the manner of scipy.stats.permutation_test:

    >>> import numpy as np, stimkit
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(8, 5)) + 0.4, rng.normal(size=(8, 5))
    >>> A, B = rng.normal(size=(6, 5)) + 0.4, rng.normal(size=(6, 5))
    >>> res = stimkit.weat(X, Y, A, B)
    >>> res.method, res.n_partitions           # C(16, 8) <= 100,000: every partition
    ('exact', 12870)
    >>> bool(-2 <= res.effect_size <= 2), bool(res.min_p <= res.pvalue <= 1)
    (True, True)
    >>> round(stimkit.weat(Y, X, A, B).effect_size, 12) == round(-res.effect_size, 12)
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from pathlib import Path

import polars as pl

from . import DEFAULT_BUDGET, StimkitError, analysis, store
from .paths import default_db

if TYPE_CHECKING:
    import numpy as np

    from . import catalog, runner


@dataclass(frozen=True)
class WeatResult:
    statistic: float               # sum_X s(x) - sum_Y s(y) (difference of means when sizes differ)
    effect_size: float             # d, with the sample standard deviation (ddof)
    pvalue: float
    method: str                    # exact | sampled | parametric
    n_partitions: int              # C(n_x + n_y, n_x)
    min_p: float | None            # the smallest p this procedure can give
    associations: np.ndarray       # s(w, A, B) per target, X first
    null_distribution: np.ndarray | None = None  # the statistic under the null (sampled or parametric draws)
    ci: tuple[float, float] | None = None        # bootstrap percentile CI for d


def weat(X, Y, A, B, *, method: str = "auto", alternative: str = "greater", n_samples: int = DEFAULT_BUDGET,
         seed: int | None = None, bootstrap: int = 0, ci_level: float = 0.95, ddof: int = 1) -> WeatResult:
    """WEAT / SEAT on vectors (rows): X, Y targets, A, B attributes.

    method: auto (exact when C(n_x + n_y, n_x) <= n_samples, else sampled), exact,
    sampled (the observed partition counted once, n_samples - 1 draws), or parametric (a
    normal fit to n_samples draws, as Caliskan et al.'s replication). X and Y may differ
    in size: the statistic is then the difference of mean s(w). The same seed gives the
    same result, whatever ran before."""
    import numpy as np

    from . import stats
    from .seeding import rng_for

    X, Y, A, B = (np.asarray(m, dtype=np.float64) for m in (X, Y, A, B))
    stats.check_inputs(X, Y, A, B, "weat")
    if method not in stats.METHODS or alternative not in stats.ALTERNATIVES:
        raise stats.InvalidInput(f"weat: method must be one of {stats.METHODS} and alternative one of {stats.ALTERNATIVES}")
    s = stats.association(np.concatenate([X, Y]), A, B)
    sx, sy = s[: len(X)], s[len(X):]
    stats.check_associations(sx, sy, "weat")
    rng = rng_for(seed, "weat") if seed is not None else np.random.default_rng()
    pv = stats.permutation_p(s, len(X), alternative, method, n_samples, rng, return_null=True)
    total, nx, ny = float(s.sum()), len(X), len(Y)
    null = None
    if pv.null is not None:  # subset sums of X_i -> the statistic
        null = 2 * pv.null - total if nx == ny else pv.null / nx - (total - pv.null) / ny
    ci = None
    if bootstrap:
        W = stats.unit_rows(np.concatenate([X, Y]))
        ci = stats.bootstrap_d(W @ stats.unit_rows(A).T, W @ stats.unit_rows(B).T, nx, bootstrap,
                               rng_for(seed, "weat", "bootstrap") if seed is not None else np.random.default_rng(),
                               ci_level, ddof)
    statistic = stats.test_statistic(sx, sy) if nx == ny else float(sx.mean() - sy.mean())
    return WeatResult(statistic, stats.effect_size(sx, sy, ddof), pv.p, pv.method, pv.partitions, pv.min_p, s, null, ci)


class Store:
    """A stimkit store (a DuckDB file). Opened read-only, it never creates a file and
    refuses writes; read-write, it brings the schema up to date."""

    def __init__(self, path: str | Path | None = None, read_only: bool = False, on_wait=None, allow_files: bool = False):
        self.path = Path(path) if path is not None else default_db()
        self.read_only = read_only
        self.con = store.connect(self.path, read_only=read_only, on_wait=on_wait, allow_files=allow_files)
        self.family: analysis.Family | None = None  # the family of the last results()/check()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise StimkitError(f"{what} writes to the store: open it with read_only=False")

    # ------------------------------------------------------------------ stimuli

    def generate(self, wordlist_names: list[str] | None = None, template_sets: list[str] | None = None,
                 wordlist_dir: str | Path | None = None, template_dir: str | Path | None = None,
                 override: bool = False) -> list[dict]:
        """Render word lists through template sets into versioned sets (a no-op when nothing
        changed). Your own lists (`wordlist_dir`) and template sets (`template_dir`) join the
        built-in ones; one with a built-in name is refused unless `override` (recorded in the
        set's provenance). With `wordlist_dir` and no names, only your lists are generated."""
        from . import generate, templates, wordlists

        self._writable("generate")
        lists = wordlists.load_all()
        own = None
        if wordlist_dir:
            own = wordlists.load_all(wordlist_dir)
            lists = wordlists.merge(lists, own, override)
        specs = generate.plan(lists, wordlist_names, template_sets, list(own) if own else None)
        tsets = {name: templates.load_set(name, template_dir, override) for name in dict.fromkeys(s.template_set for s in specs)}
        return generate.generate(self.con, specs, lists, tsets)

    def sets(self, like: str | None = None, all_versions: bool = False) -> pl.DataFrame:
        view = "stimulus_sets" if all_versions else "current_sets"
        where = "WHERE name LIKE ?" if like else ""
        return store.frame(self.con, f"SELECT name, version, n_words, n_stimuli, created_at FROM {view} {where} "
                                     "ORDER BY name, created_at", [f"%{like}%"] if like else None)

    def catalog(self) -> dict[str, catalog.TestDef]:
        from . import catalog

        return catalog.load(self.con)

    # ------------------------------------------------------------------ vectors

    def encode(self, encoder_specs: list[str], sets: list[str] | None = None, tests: list[str] | None = None,
               everything: bool = False, batch_size: int = 4096, progress=None, engine: str = "local",
               workers: int | None = None) -> list[dict]:
        """Encode what is missing for each encoder; returns one report per encoder (with its
        most common notes). While the model runs the store is closed, opened only for each
        append: other processes can read it meanwhile."""
        from . import catalog, embeddings, encoders

        self._writable("encode")
        encs = [encoders.resolve(spec) for spec in encoder_specs]  # every spec checked before anything is written
        stimuli = catalog.select_stimuli(self.con, sets, tests, everything)
        self.con.close()
        reports = []
        try:
            for enc in encs:
                tick = progress(enc) if progress else None
                reports.append(embeddings.encode_missing_released(self.path, enc, stimuli, batch_size, tick, engine, workers))
        finally:
            self.con = store.connect(self.path)
        for r, enc in zip(reports, encs):
            r["notes"] = embeddings.notes(self.con, enc)
        return reports

    # ------------------------------------------------------------------ tests

    def test(self, tests: list[str] | None = None, *, encoders: list[str] = ("glove-6b-50d",), everything: bool = False,
             source: str | None = None, x: str | None = None, y: str | None = None, a: str | None = None,
             b: str | None = None, name: str = "adhoc", context: str = "sentence", command: str = "library",
             options: runner.Options | None = None, encode=None, on_result=None, on_failure=None, progress=None,
             **option_values) -> runner.RunReport:
        """Run tests (names or shell patterns over catalog and imported tests, or `everything`,
        or one ad-hoc test from four set names or SELECTs) on each encoder, in one run.
        Options as keywords (budget=, method=, alternative=, seed=, clustered=, bootstrap=,
        balance=, cut_seed=, cuts=, alpha=) or as a runner.Options."""
        from . import catalog, runner

        self._writable("test")
        opts = options or runner.Options(**option_values)
        opts.validate()
        if any((x, y, a, b)):
            if not all((x, y, a, b)):
                from . import UsageError
                raise UsageError("an ad-hoc test needs all four of --x --y --a --b")
            chosen = [catalog.TestDef(name, (x, y, a, b), context, None, opts.balance or "none", source="adhoc")]
        else:
            if not (tests or everything):
                from . import UsageError
                raise UsageError("name tests (or patterns), or pass --all, or give an ad-hoc test with --x --y --a --b")
            chosen = catalog.select(self.con, list(tests or []), everything, source)
        self._encode_released(chosen, list(encoders), opts, progress)
        return runner.run_tests(self.con, chosen, list(encoders), opts, command, encode, on_result, on_failure)

    def _encode_released(self, tests: list, encoder_specs: list[str], opts: runner.Options, progress=None) -> None:
        """Encode what the tests need with the store closed between appends, so readers get in
        during the long part of a run. Anything that fails here is left to the run, which
        reports it per test and encoder (and c-word tests encode their token variants there)."""
        from . import catalog, embeddings, encoders, runner

        frames = []
        for t in tests:
            if t.context == "c-word":
                continue
            try:
                sets = catalog.fetch_sets(self.con, t)
                runner.refuse_early(t, sets, opts)  # nothing is encoded for a test the run will refuse
            except StimkitError:
                continue
            frames += list(sets.values())
        if not frames:
            return
        stimuli = embeddings.stimuli_of(frames)
        self.con.close()
        try:
            for spec in encoder_specs:
                try:
                    enc = encoders.resolve(spec)
                    embeddings.encode_missing_released(self.path, enc, stimuli, progress=progress(enc) if progress else None)
                except StimkitError:
                    continue
        finally:
            self.con = store.connect(self.path)

    # ------------------------------------------------------------------ results

    def results(self, where: str | None = None, run: str | None = None, correct: str = "holm",
                alpha: float = 0.01) -> pl.DataFrame:
        """The family's results with adjusted p (`correct`: holm | bh | by | none); the
        family (its definition and m) is in `self.family`."""
        self.family = analysis.define_family(self.con, where, alpha, run)
        return analysis.corrected(self.con, correct)

    def check(self, where: str | None = None, run: str | None = None, alpha: float = 0.01) -> pl.DataFrame:
        """Every consistency comparison the family allows, with its verdict."""
        self.family = analysis.define_family(self.con, where, alpha, run, allow_empty=True)
        return analysis.consistency(self.con)

    def query(self, sql: str, params: dict | None = None) -> pl.DataFrame:
        """A named query (queries/NAME.sql) or one reading statement; `family` is defined first.
        Host files are reachable only from a store opened with allow_files=True."""
        analysis.define_family(self.con, None, 0.01, None, allow_empty=True)
        return analysis.read_query(self.con, analysis.named_query(sql) or sql, params)

    # ------------------------------------------------------------------ audits and WEFAT

    def audit(self, tests: list[str] | None = None, encoders: list[str] = ("minilm",),
              template_sets: list[str] | None = None, alpha: float = 0.01, command: str = "library",
              on_audit=None, **option_values) -> tuple[str, list[dict]]:
        """Template audits (see stimkit.audit): per template alone and left out, a
        random-effects meta-analysis, flip rates and word influence."""
        from . import audit, runner

        self._writable("audit")
        opts = runner.Options(**{"alpha": alpha, **option_values})
        opts.validate()
        return audit.run_templates(self.con, tests, list(encoders), template_sets, opts, alpha, command, on_audit)

    def wefat(self, name: str, encoder: str = "glove-6b-50d", **option_values) -> dict:
        """A WEFAT from the catalog (queries/wefat.toml) on one encoder; returns the stored summary."""
        from . import encoders, wefat

        self._writable("wefat")
        opts = wefat.Options(**option_values)
        return wefat.run_wefat(self.con, wefat.get(name), encoders.resolve(encoder), opts)


def open(path: str | Path | None = None, read_only: bool = False) -> Store:  # noqa: A001  (stimkit.open, like duckdb.connect)
    """Open (read-write: create if missing) a stimkit store."""
    return Store(path, read_only)


__all__ = ["Store", "WeatResult", "open", "weat"]
