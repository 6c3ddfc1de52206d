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
import duckdb

from . import DEFAULT_BUDGET, DEFAULT_PAPER, StimkitError, store
from .analysis import families as analysis
from .paths import default_db
from .errors import InputError
from .store import usersql

if TYPE_CHECKING:
    import numpy as np

    from .catalog import tests as catalog
    from .run import runner


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
    refuses writes; read-write, it brings the schema up to date.

    Every CLI command is one method here. Long writes (encode, test, run, audit, wefat)
    encode first with the file closed between appends, so other processes can read the
    store while a model runs; only the short statistics phase holds it."""

    def __init__(self, path: str | Path | None = None, read_only: bool = False, on_wait=None, allow_files: bool = False):
        self.path = Path(path) if path is not None else default_db()
        self.read_only = read_only
        self._on_wait, self._allow_files = on_wait, allow_files
        self._con = None
        self.con  # open now: a missing store (read-only) or a newer schema is refused here
        self.family: analysis.Family | None = None  # the family of the last results()/check()

    @property
    def con(self):
        """The DuckDB connection; reopened on first use after a phase that released the file."""
        if self._con is None:
            self._con = store.connect(self.path, read_only=self.read_only, on_wait=self._on_wait,
                                      allow_files=self._allow_files)
        return self._con

    def _release(self) -> None:
        """Close the file so other processes can open it (a long encode, writing figures)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def close(self) -> None:
        self._release()

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
        from .stimuli import generate, templates, wordlists

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

    def catalog(self, paper: str | None = None) -> pl.DataFrame:
        """The tests (catalog and imported; `paper`: one paper's) and the WEFAT entries, a row each."""
        from .catalog import tests as catalog

        return catalog.table(self.con, paper)

    def test_sets(self, name: str) -> tuple[catalog.TestDef, pl.DataFrame]:
        """A test's definition and its four set queries with the number of stimuli each selects."""
        from .catalog import tests as catalog

        test = catalog.get(self.con, name)
        return test, catalog.sizes(self.con, test)

    def export_sentbias(self, outdir: str | Path, tests: list[str] | None = None, balance: str | None = None,
                        seed: int = 0, force: bool = False) -> list[Path]:
        """One JSON file per test in the published SEAT format (unbalanced unless `balance`)."""
        from .catalog import sentbias

        return sentbias.export(self.con, Path(outdir), list(tests or []), balance, seed, force)

    def import_sentbias(self, directory: str | Path, prefix: str = "import:", override: bool = False) -> list[dict]:
        """Published-format JSON files as stimulus sets and tests named <prefix><file stem>."""
        from .catalog import sentbias

        self._writable("import")
        return sentbias.import_dir(self.con, Path(directory), prefix, override)

    # ------------------------------------------------------------------ vectors

    def encode(self, encoder_specs: list[str], sets: list[str] | None = None, tests: list[str] | None = None,
               everything: bool = False, batch_size: int = 4096, progress=None, engine: str = "local",
               workers: int | None = None) -> list[dict]:
        """Encode what is missing for each encoder; returns one report per encoder (with its
        most common notes). While the model runs the store is closed, opened only for each
        append: other processes can read it meanwhile."""
        from .catalog import tests as catalog
        from .encoders import embeddings
        from . import encoders

        self._writable("encode")
        encs = [encoders.resolve(spec) for spec in encoder_specs]  # every spec checked before anything is written
        stimuli = catalog.select_stimuli(self.con, sets, tests, everything)
        reports = self._encode_released([(enc, stimuli) for enc in encs], progress, batch_size, engine, workers)
        for r, enc in zip(reports, encs):
            r["notes"] = embeddings.notes(self.con, enc)
        return reports

    def encoders(self) -> pl.DataFrame:
        """Every encoder with vectors in the store: spec, fingerprint, dimension, count."""
        from .encoders import embeddings

        return embeddings.stored(self.con)

    def prepare_vectors(self, tests=(), encoder_specs=(), options: runner.Options | None = None, wefats=(),
                        progress=None) -> list[dict]:
        """Encode what these tests (TestDefs) and WEFATs (WefatDefs) will need, with the store
        closed between appends, so that readers get in during the long part of a run. A test
        the run will refuse, or an encoder that fails, is left to the run, which reports it;
        c-word tests encode each encoder's token variant. Returns a report per encoding."""
        self._writable("encoding")
        return self._encode_released(self._needs(list(tests), list(encoder_specs), options, list(wefats)), progress,
                              keep_going=True)

    def _needs(self, tests: list, encoder_specs: list[str], opts, wefats: list) -> list[tuple]:
        """(encoder, stimuli) pairs: what the tests and WEFATs will encode."""
        from .catalog import tests as catalog
        from .run import cword, runner, wefat
        from .encoders import embeddings
        from . import encoders

        opts = opts or runner.Options()
        encs = []
        for spec in encoder_specs:
            try:
                encs.append(encoders.resolve(spec))
            except runner.EXPECTED_FAILURES:
                continue
        plain, by_word = [], {}
        for t in tests:
            try:
                sets = catalog.fetch_sets(self.con, t)
                runner.refuse_early(t, sets, opts)  # nothing is encoded for a test the run will refuse
            except runner.EXPECTED_FAILURES:
                continue
            if t.context == "c-word":
                by_word[t.name] = (t, sets)
            else:
                plain += list(sets.values())
        for w in wefats:
            try:
                plain += wefat.frames_of(self.con, w)
            except runner.EXPECTED_FAILURES:
                continue
        needs = [(enc, embeddings.stimuli_of(plain)) for enc in encs] if plain else []
        if by_word:
            stimuli = embeddings.stimuli_of(f for _, sets in by_word.values() for f in sets.values())
            for enc in encs:
                try:
                    (variant,) = cword.encoders_for([t for t, _ in by_word.values()], [enc],
                                                    {name: sets for name, (_, sets) in by_word.items()})
                except runner.EXPECTED_FAILURES:
                    continue
                needs.append((variant, stimuli))
        return needs

    def _encode_released(self, needs: list[tuple], progress=None, batch_size: int = 4096, engine: str = "local",
                         workers: int | None = None, keep_going: bool = False) -> list[dict]:
        """Encode each (encoder, stimuli) with this store's connection closed: the file is
        opened only to find what is missing and for each append. `keep_going`: an encoder
        that fails is skipped (the run that follows reports it)."""
        from .encoders import embeddings
        from .run import runner

        if not needs:
            return []
        reports = []
        self._release()
        for enc, stimuli in needs:
            try:
                reports.append(embeddings.encode_missing_released(
                    self.path, enc, stimuli, batch_size, progress(enc) if progress else None, engine, workers))
            except runner.EXPECTED_FAILURES:
                if not keep_going:
                    raise
        return reports

    # ------------------------------------------------------------------ tests

    def test(self, tests: list[str] | None = None, *, encoders: list[str] = ("glove-6b-50d",), everything: bool = False,
             source: str | None = None, x: str | None = None, y: str | None = None, a: str | None = None,
             b: str | None = None, name: str = "adhoc", context: str | None = None, command: str = "library",
             options: runner.Options | None = None, encode=None, on_result=None, on_failure=None, progress=None,
             **option_values) -> runner.RunReport:
        """Run tests (names or shell patterns over catalog and imported tests, or `everything`,
        or one ad-hoc test from four set names or SELECTs) on each encoder, in one run.
        `context="c-word"` runs sentence tests on each encoder's inserted-word vectors.
        Options as keywords (budget=, method=, alternative=, seed=, clustered=, bootstrap=,
        balance=, cut_seed=, cuts=, alpha=) or as a runner.Options."""
        from . import UsageError
        from .catalog import tests as catalog
        from .run import runner

        self._writable("test")
        opts = options or runner.Options(**option_values)
        opts.validate()
        if any((x, y, a, b)):
            if not all((x, y, a, b)):
                raise UsageError("an ad-hoc test needs all four of --x --y --a --b")
            chosen = [catalog.TestDef(name, (x, y, a, b), context or "sentence", None, opts.balance or "none", source="adhoc")]
        else:
            if not (tests or everything):
                raise UsageError("name tests (or patterns), or pass --all, or give an ad-hoc test with --x --y --a --b")
            chosen = catalog.select(self.con, list(tests or []), everything, source)
            if context is not None:  # c-word runs a sentence test's inserted word
                from .run import cword
                chosen = [cword.in_context(t, context) for t in chosen]
        self.prepare_vectors(chosen, list(encoders), opts, progress=progress)
        return runner.run_tests(self.con, chosen, list(encoders), opts, command, encode, on_result, on_failure)

    def run(self, encoders: list[str] | None = None, *, paper: str = DEFAULT_PAPER, options: runner.Options | None = None,
            progress=None, on_result=None, on_failure=None, log=None, **option_values):
        """The main job (`stimkit run`): generate the catalog, encode, run every test of
        `paper` on each encoder in one run, Holm over the run, the consistency checks and
        the WEFAT catalog (may-2019); or Tan & Celis's Tables 7 and 8 (tan-celis-2019).
        Returns a mainjob.MainJob."""
        from .catalog import tests as catalog
        from .study import mainjob, tancelis
        from .run import runner

        self._writable("run")
        opts = options or runner.Options(**option_values)
        opts.validate()
        if paper == tancelis.PAPER:
            return tancelis.run_job(self, encoders, opts, log, progress)
        catalog.by_paper(catalog.load_toml(), paper)  # an unknown paper is refused
        return mainjob.run(self, encoders, opts, progress, on_result, on_failure)

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

    def query(self, sql: str, params: dict | None = None, where: str | None = None, run: str | None = None,
              alpha: float = 0.01) -> pl.DataFrame:
        """A named query (queries/NAME.sql) or one reading statement with named parameters
        ($name); the temp view `family` (see `results`) is defined first. Host files are
        reachable only from a store opened with allow_files=True."""
        self.family = analysis.define_family(self.con, where, alpha, run, allow_empty=True)
        sql = usersql.check_reading(analysis.named_query(sql) or sql)
        return usersql.read(self.con, sql, params)

    def report(self, out_dir: str | Path = "report", where: str | None = None, correct: str = "holm",
               alpha: float = 0.01, formats: list[str] | None = None, tests: list[str] | None = None,
               audits: bool = False, force: bool = False):
        """Write out_dir/report.html (figures inline), figures/ and tables/ from the store
        (reads only). Returns report.Written; its `notes` say what was asked for but absent."""
        try:  # matplotlib is an extra: the rest of the library works without it
            from . import report
        except ImportError as e:
            raise StimkitError(f"the report needs {e.name}: pip install 'stimkit[report]'") from None
        data = report.gather(self.con, where, correct, alpha, tests, audits)
        self._release()  # drawing takes seconds: let writers in
        written = report.write_report(data, Path(out_dir), formats, force)
        if audits and not data.audits:
            written.notes.append("no template audits" + (f" of {', '.join(tests)}" if tests else "")
                                 + " (run `stimkit audit templates`)")
        return written

    # ------------------------------------------------------------------ audits and WEFAT

    def audit(self, tests: list[str] | None = None, encoders: list[str] = ("minilm",),
              template_sets: list[str] | None = None, alpha: float = 0.01, command: str = "library",
              on_audit=None, progress=None, **option_values) -> tuple[str, list[dict]]:
        """Template audits (see stimkit.audit): per template alone and left out, a
        random-effects meta-analysis, flip rates and word influence."""
        from .run import audit, runner

        self._writable("audit")
        opts = runner.Options(**{"alpha": alpha, **option_values})
        opts.validate()
        plan = audit.plan(self.con, tests or audit.caliskan_sentence_tests(), list(encoders),
                          template_sets or [audit.SENTENCE_SET])
        self.prepare_vectors(plan.retemplated, list(encoders), opts, progress=progress)
        return audit.run_templates(self.con, plan, opts, alpha, command, on_audit)

    def audit_compare(self, tests: list[str], template_sets: list[str], encoders: list[str] = ("minilm",),
                      alpha: float = 0.01, command: str = "library", progress=None,
                      **option_values) -> tuple[str, pl.DataFrame]:
        """The same tests under each template set: d, its shift and flips against the first set."""
        from .run import audit, runner

        self._writable("audit")
        opts = runner.Options(**{"alpha": alpha, **option_values})
        opts.validate()
        plan = audit.plan(self.con, tests, list(encoders), list(template_sets), min_template_sets=2)
        self.prepare_vectors(plan.retemplated, list(encoders), opts, progress=progress)
        run_id, rows = audit.run_compare(self.con, plan, opts, alpha, command)
        return run_id, pl.DataFrame(rows)

    def audits(self, where: str | None = None, top: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Stored audits (pooled d, tau2, I2, flip rates) and the `top` templates that move each most."""
        from .run import audit

        if where:
            usersql.check_select(f"SELECT * FROM audits WHERE ({where})", f"--where {where!r}")
        try:
            return audit.summary(self.con, where, top)
        except duckdb.Error as e:
            raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None

    def wefat(self, name: str | None = None, encoder: str = "glove-6b-50d", *, targets: str | None = None,
              a: str | None = None, b: str | None = None, property: str | None = None, label: str = "adhoc",  # noqa: A002
              context: str | None = None, templates: str = "may2019", progress=None, **option_values) -> dict:
        """A WEFAT from the catalog (queries/wefat.toml) by `name`, or ad hoc from `targets`,
        `a`, `b` and `property`, on one encoder; returns the stored summary with `items`."""
        from . import encoders
        from .run import wefat

        self._writable("wefat")
        test = wefat.define(name, targets, a, b, property, label, context, templates)
        opts = wefat.Options(**option_values)
        opts.validate()
        enc = encoders.resolve(encoder)
        wefat.refuse_early(self.con, test)
        self.prepare_vectors(encoder_specs=[encoder], wefats=[test], progress=progress)
        return wefat.run_wefat(self.con, test, enc, opts)

    def wefat_results(self, where: str | None = None, words: bool = False) -> pl.DataFrame:
        """Stored WEFAT results (default: the latest run), or with `words` their per-word rows."""
        from .run import wefat

        return wefat.stored(self.con, where, words)


def open(path: str | Path | None = None, read_only: bool = False) -> Store:  # noqa: A001  (stimkit.open, like duckdb.connect)
    """Open (read-write: create if missing) a stimkit store."""
    return Store(path, read_only)


__all__ = ["Store", "WeatResult", "open", "weat"]
