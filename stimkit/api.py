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

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import DEFAULT_BUDGET, DEFAULT_PAPER, store
from .analysis import families as analysis
from .errors import InputError, StimkitError, UsageError, first_line as _first_line
from .paths import default_db
from .plain import Rows
from .stimuli.folders import Folders
from .stimuli.limits import Limits
from .store import usersql

# Imported where used: the run layer pulls in numpy and the statistics, and polars is a third of
# a small store's reading (which `result_rows` prints without).
if TYPE_CHECKING:
    import numpy as np
    import polars as pl

    from .analysis.frame import FamilyFrame
    from .catalog.definitions import TestDef
    from .catalog.wefat import WefatDef
    from .run.baseline import BaselineOptions
    from .run.options import Options, Procedure
    from .run.plan import Plan
    from .run.rows import Audit, RunReport, WefatResult
    from .study.study import Study


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
    ci: tuple[float, float] | None = None        # interval for d (stats.intervals: noncentral t, attributes fixed)


def score(texts, spec: str = "smollm2-135m") -> "np.ndarray":
    """One log-probability a text (float64, nats) from a scoring encoder, as stimkit.weat
    works on arrays (nothing is stored): the sum over every token for a causal LM (the first
    token given the model's BOS token, as lm-evaluation-harness scores a sentence), the
    pseudo-log-likelihood for a masked one (`hf:PATH,score=pll`). The model is loaded once a
    process and spec."""
    import numpy as np

    from .encoders.scoring import is_scoring

    texts = [texts] if isinstance(texts, str) else list(texts)
    enc = _scorer(spec)
    if not is_scoring(enc):
        raise UsageError(f"encoder {spec!r} gives vectors, not log-probabilities: score needs a scoring encoder "
                         "(smollm2-135m, hf:PATH,score=causal or score=pll)")
    from .encoders.token_scores import distinct_texts

    distinct_texts(texts)  # an empty text refused in one line
    return np.asarray(enc.totals(texts), dtype=np.float64)


_SCORERS: dict = {}


def _scorer(spec: str):
    """The encoder of a spec, its model kept loaded for the next call in this process."""
    from . import encoders

    if spec not in _SCORERS:
        _SCORERS.clear()  # one model held at a time: a 135M model is half a gigabyte
        _SCORERS[spec] = encoders.resolve(spec)
    return _SCORERS[spec]


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
    from .run.association import statistics
    from .run.options import Options
    from .seeding import rng_for

    if method not in stats.METHODS or alternative not in stats.ALTERNATIVES:
        raise stats.InvalidInput(f"weat: method must be one of {stats.METHODS} and alternative one of {stats.ALTERNATIVES}")
    X, Y, A, B = (np.asarray(m, dtype=np.float64) for m in (X, Y, A, B))
    # The engine's own computation (what `stimkit test` runs on a prepared test), each vector
    # its own unit; the streams are the function's own, so no result depends on what ran before.
    opts = Options(budget=n_samples, method=method, alternative=alternative, bootstrap=bootstrap, ci_level=ci_level,
                   ddof=ddof, **({"seed": seed} if seed is not None else {}))
    rng = (lambda: rng_for(seed, "weat")) if seed is not None else np.random.default_rng
    out = statistics(X, Y, A, B, opts, "weat", rng, rng_for(seed if seed is not None else 0, "weat", "interval"),
                     return_null=True)
    ci = (out["ci"].low, out["ci"].high) if out["ci"] else None
    return WeatResult(out["statistic"], out["effect_size"], out["p_value"], out["p_method"], out["partitions"],
                      out["min_p"], out["association"], out["null"], ci)


@dataclass
class StudyRun:
    """What `Store.run` did: the study, the sets it generated, its run, and the study's table."""
    study: Study
    run: RunReport
    generated: list[str] = field(default_factory=list)   # notes on sets generated for it
    family: analysis.Family | None = None
    results: pl.DataFrame | None = None    # the study's correction over its run
    checks: pl.DataFrame | None = None
    tests: list[str] = field(default_factory=list)       # the study's tests, in its order (its table's rows)
    seconds: float = 0.0
    crows: object = None    # run.crows_study.CrowsPart: its CrowS tests (computed or reused), None if none



class Store:
    """A stimkit store (a DuckDB file). Opened read-only, it never creates a file and
    refuses writes; read-write, it brings the schema up to date.

    Every CLI command is one method here. A run goes one way: validate (its Options) ->
    plan (run.plan.make: sets selected once, refusals decided) -> encode what the plan
    needs with the file closed between appends, so other processes can read the store
    while a model runs -> execute the plan in one transaction."""

    def __init__(self, path: str | Path | None = None, read_only: bool = False, on_wait=None, allow_files: bool = False,
                 *, catalog_dir: str | Path | None = None, wordlist_dir: str | Path | None = None,
                 template_dir: str | Path | None = None, override: bool = False, limits: Limits | None = None):
        self.path = Path(path) if path is not None else default_db()
        self.read_only = read_only
        # Your own study's inputs: test definitions (else STIMKIT_CATALOG_DIR), word lists and
        # template sets beside the built-in ones (used where a command generates missing sets).
        # Built once; a study's run passes its own (folders.using), leaving these as they are.
        self.folders = Folders(catalog_dir, wordlist_dir, template_dir, override)
        self._limits = limits  # None: the environment's, read when first needed (Store.limits)
        self._on_wait, self._allow_files = on_wait, allow_files
        self._con = None
        self.con  # open now: a missing store (read-only) or a newer schema is refused here

    @property
    def limits(self) -> Limits:
        """The bounds on what this store's commands render (stimuli.limits): those it was opened
        with, else the environment's (STIMKIT_MAX_*), read once, when it first renders."""
        if self._limits is None:
            self._limits = Limits.from_env()
        return self._limits

    # the folders by their keyword names (`stimkit.open(path, wordlist_dir=...)`), read-only
    catalog_dir = property(lambda self: self.folders.catalog_dir)
    wordlist_dir = property(lambda self: self.folders.wordlist_dir)
    template_dir = property(lambda self: self.folders.template_dir)
    override = property(lambda self: self.folders.override)

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
            raise UsageError(f"{what} writes to the store: open it with read_only=False")

    # ------------------------------------------------------------------ stimuli

    def generate(self, wordlist_names: list[str] | None = None, template_sets: list[str] | None = None,
                 wordlist_dir: str | Path | None = None, template_dir: str | Path | None = None,
                 override: bool = False, limits: Limits | None = None) -> list[dict]:
        """Render word lists through template sets into versioned sets (a no-op when nothing
        changed). Your own lists (`wordlist_dir`) and template sets (`template_dir`) join the
        built-in ones; one with a built-in name is refused unless `override` (recorded in the
        set's provenance). With `wordlist_dir` and no names, only your lists are generated.
        The folders default to the ones the store was opened with (`stimkit.open(path, wordlist_dir=...)`),
        the render `limits` to the store's (Store.limits)."""
        from .catalog.definitions import default_specs
        from .stimuli import generate

        self._writable("generate")
        folders = self.folders.using(wordlist_dir=wordlist_dir, template_dir=template_dir, override=override)
        own = folders.own_lists()
        lists = folders.lists(own)
        specs = generate.plan(lists, wordlist_names, template_sets, list(own) if own else None, default_specs(lists))
        tsets = {name: folders.template_set(name) for name in dict.fromkeys(s.template_set for s in specs)}
        specs = generate.for_template_sets(specs, tsets, bool(wordlist_names))
        return generate.generate(self.con, specs, lists, tsets, limits=limits if limits is not None else self.limits)

    def generate_study(self, study: str | Path | Study, limits: Limits | None = None) -> list[dict]:
        """The sets a study's tests and WEFATs read, each made current as today's files give it
        (`stimkit generate` in a study folder): rows as `generate` returns them (new, restored
        or unchanged), nothing else rendered."""
        from .stimuli import current
        from .study import study as studies

        self._writable("generate")
        study = study if isinstance(study, studies.Study) else studies.load(study)
        folders = self._study_folders(study)
        _, chosen, wefats = self._study_tests(study, folders, None, {})
        specs = list(dict.fromkeys([s for t in chosen for s in t.set_specs()] + [s for w in wefats for s in w.set_specs()]))
        lists = folders.lists()
        before = current.states(self.con, specs, lists, folders.template_set)
        current.ensure(self.con, specs, lists, folders.template_set, limits if limits is not None else self.limits)
        now = {st.spec: st.current for st in current.states(self.con, specs, lists, folders.template_set)}
        sizes = dict(store.rows(self.con, "SELECT version, n_stimuli FROM stimulus_sets WHERE version IN "
                                          "(SELECT unnest(?))", [list(now.values())]))
        status = {"current": "unchanged", "missing": "new", "outdated": "new", "restore": "restored"}
        return [{"name": st.spec.name, "version": now[st.spec], "status": status[st.status],
                 "n_stimuli": sizes.get(now[st.spec], 0)} for st in before]

    def _generate_missing(self, specs, folders: Folders | None = None) -> list[str]:
        """Make the sets a plan names current as today's files give them (stimuli.current:
        rendered where their input key is new, logged current where another version was), from
        the built-in word lists and template sets and `folders`' own (default the store's).
        A set whose word list is unknown is left to fail where it is used."""
        from .stimuli import current

        folders = folders or self.folders
        return current.ensure(self.con, specs, folders.lists(), folders.template_set, self.limits)

    def sets(self, like: str | None = None, all_versions: bool = False) -> pl.DataFrame:
        view = "stimulus_sets" if all_versions else "current_sets"
        where = "WHERE name LIKE ?" if like else ""
        return store.frame(self.con, f"SELECT name, version, language, translation, n_words, n_stimuli, created_at "
                                     f"FROM {view} {where} ORDER BY name, created_at", [f"%{like}%"] if like else None)

    def diagnose_sets(self, like: str | None = None, encoders: list[str] | None = None,
                      language: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
        """What the current sets are made of (`sets --diagnose`): per set, its words' Zipf
        frequency (mean, SD), each static encoder's OOV share and each tokenizer's mean subword
        count (the `encoders` named, else those stored), in each set's own language unless
        `language` says otherwise; per target set of the latest results, split-half
        reliability. Returns (sets, reliability, notes on what was skipped)."""
        from .run.diagnose import sets_report

        return sets_report(self.con, like, encoders, language)

    def catalog(self, paper: str | None = None) -> pl.DataFrame:
        """The tests (catalog and imported; `paper`: one paper's) and the WEFAT entries, a row each."""
        from .catalog import definitions as catalog

        return catalog.table(self.con, paper, self.folders.catalog_dir)

    def test_sets(self, name: str) -> tuple[TestDef, pl.DataFrame]:
        """A test's definition and its four set queries with the number of stimuli each selects."""
        from .catalog import definitions as catalog

        test = catalog.get(self.con, name, self.folders.catalog_dir)
        return test, catalog.sizes(self.con, test)

    def export_sentbias(self, outdir: str | Path, tests: list[str] | None = None, balance: str | None = None,
                        seed: int = 0, force: bool = False) -> list[Path]:
        """One JSON file per test in the published SEAT format (unbalanced unless `balance`)."""
        from .catalog import sentbias

        return sentbias.export(self.con, Path(outdir), list(tests or []), balance, seed, force)

    def import_sentbias(self, directory: str | Path, prefix: str = "import:", override: bool = False,
                        units: str | None = None) -> list[dict]:
        """Published-format JSON files as stimulus sets and tests named <prefix><file stem>.
        `units`: the tests' units (None: words, a user's question about words)."""
        from .catalog import sentbias

        self._writable("import")
        return sentbias.import_dir(self.con, Path(directory), prefix, override or self.folders.override, units,
                                   limits=self.limits)

    def import_weathub(self, directory: str | Path, only: list[str] | None = None) -> list[dict]:
        """WEATHub as published (its data/ folder of <lang>_<variant> folders): word tests named
        weathub:<folder>:<file stem>, their sets with the folder's language and provenance.
        `only`: folder patterns ('de_*', '*_human')."""
        from .catalog import weathub

        self._writable("import")
        return weathub.import_dir(self.con, Path(directory), only, limits=self.limits)

    def import_holisticbias(self, source: str | Path, out: str | Path, force: bool = False,
                            generate: bool = True) -> dict:
        """HolisticBias's JSON files (catalog.holisticbias) as word lists and the multi-slot
        template set `holisticbias`, written into the folder `out`, then (unless not
        `generate`) its whole product generated: the set `descriptor=*@holisticbias`.
        Returns the files written, the counts read, the conversion's notes and the sets."""
        from .catalog import holisticbias

        if generate:
            self._writable("import holisticbias")
        report = holisticbias.import_files(Path(source), Path(out), force)
        sets = self.generate(None, [holisticbias.TEMPLATE_SET], Path(out) / "wordlists", Path(out) / "templates") \
            if generate else []
        return {**report, "sets": sets}

    def import_corpus(self, paths: list[str | Path], wordlists_: list[str], *, name: str = "corpus",
                      per_word: int = 100, seed: int = 0, min_contexts: int | None = None, case: str = "auto",
                      max_line_chars: int | None = None, limits: Limits | None = None,
                      document: str | None = None, encoding: str = "utf-8"):
        """Contexts from real text (catalog.corpus): sentences of plain text, JSONL or Parquet
        files holding the words of the lists `wordlists_`, up to `per_word` a word (seeded),
        stored as sets `<list>@corpus:<name>` with their provenance. `document`: what a
        document is (file, record or a field; None: record for JSONL and Parquet, file for
        text). Returns a CorpusImport (its `few`: the words with fewer than `min_contexts` contexts)."""
        from .catalog import corpus

        self._writable("import corpus")
        lists = self.folders.lists()
        return corpus.import_corpus(self.con, list(paths), lists, list(wordlists_), name=name, per_word=per_word,
                                    seed=seed, min_contexts=min_contexts, case=case,
                                    max_chars=max_line_chars, limits=limits if limits is not None else self.limits,
                                    document=document, encoding=encoding)

    @store.all_or_nothing  # its family, replicates and vectors commit together (store.journal)
    def train(self, paths: list[str | Path] = (), *, name: str, corpus: str | None = None, method: str = "word2vec",
              seeds: int = 10, bootstrap: int = 0, dim: int = 100, window: int = 5, min_count: int = 5,
              epochs: int = 10, resample_seed: int = 0, engine: str = "local", workers: int | None = None,
              document: str | None = None, encoding: str = "utf-8", progress=None, command: str = "train"):
        """Embeddings trained on a corpus (catalog.training): the family NAME's replicates
        `trained:NAME/seed-K` (K < seeds) and `trained:NAME/boot-K` (K < bootstrap) that the store
        lacks, trained on the files `paths` (as `import corpus` reads them) or on the corpus
        imported as `corpus`, locally (a process a model, `workers` at once) or on Ray. Each
        replicate commits as it finishes; a train that fails leaves none. Returns a TrainReport."""
        from .catalog import training

        self._writable("train")
        hyper = training.Hyper(dim=dim, window=window, min_count=min_count, epochs=epochs)
        return training.train(self.con, list(paths), name=name, corpus=corpus, method=method, seeds=seeds,
                              bootstrap=bootstrap, hyper=hyper, resample_seed=resample_seed, engine=engine,
                              workers=workers, document=document, encoding=encoding, progress=progress)

    def trained(self, name: str | None = None) -> pl.DataFrame:
        """The trained replicates (of the family `name`, else of every family): one row each."""
        where = "WHERE name = ?" if name else ""
        return store.frame(self.con, "SELECT name, replicate, kind, k, fingerprint, method, seed, resample, "
                                     "n_documents, n_tokens, vocab_size, dim, seconds FROM trained_models "
                                     f"{where} ORDER BY name, kind = 'boot', k", [name] if name else None)

    # ------------------------------------------------------------------ vectors

    def encode(self, encoder_specs: list[str], sets: list[str] | None = None, tests: list[str] | None = None,
               everything: bool = False, batch_size: int = 4096, progress=None, engine: str = "local",
               workers: int | None = None) -> list[dict]:
        """Encode what is missing for each encoder; returns one report per encoder (with its
        most common notes). While the model runs the store is closed, opened only for each
        append: other processes can read it meanwhile."""
        from . import encoders
        from .catalog.definitions import select_stimuli
        from .encoders import embeddings

        self._writable("encode")
        encs = [encoders.resolve(spec, self.con) for spec in encoder_specs]  # every spec checked before anything is written
        stimuli = select_stimuli(self.con, sets, tests, everything)
        self._release()
        reports = [_score_or_encode(self.path, enc, stimuli, batch_size, progress(enc) if progress else None,
                                    engine, workers) for enc in encs]
        for r, enc in zip(reports, encs):
            r["notes"] = [] if getattr(enc, "scores", False) else embeddings.notes(self.con, enc)
        return reports

    def encoders(self) -> pl.DataFrame:
        """Every encoder with vectors in the store: spec, fingerprint, dimension, count."""
        from .encoders import embeddings

        return embeddings.stored(self.con)

    def _encode_plan(self, plan: Plan, progress=None) -> tuple[list[dict], dict[str, str]]:
        """Encode what the plan reads, with this store's connection closed (the file opened only
        to find what is missing and for each append). An encoder that fails is skipped:
        returns the reports and {fingerprint: cause} of the failures."""
        from .encoders import embeddings

        from .run import likelihood

        reports, failed = [], {}
        scored = likelihood.encodings(self.con, plan)  # language models score sentences (run.likelihood)
        needs = [(e, f) for e, f in embeddings.shared(plan.encodings) if not likelihood.scores(e)]
        if needs or scored:
            self._release()
        for enc, texts in scored:
            from .encoders import token_scores

            try:
                reports.append(token_scores.score_missing(None, enc, texts, progress(enc) if progress else None,
                                                          path=self.path))
            except StimkitError as e:
                failed[enc.fingerprint] = _first_line(e)
        for enc, stimuli in needs:
            try:
                reports.append(embeddings.encode_missing_released(self.path, enc, stimuli, 4096,
                                                                  progress(enc) if progress else None))
            except StimkitError as e:
                failed.update({e_.fingerprint: _first_line(e) for e_ in embeddings.planned(enc)})
        return reports, failed

    def _execute(self, plan: Plan, command: str, progress=None, on_result=None, on_failure=None,
                 study: dict | None = None, reuse: bool = False, families=()) -> RunReport:
        """Encode what the plan needs (released), then execute it. `reuse` (a study's run, which
        makes its family): the pairs whose results are stored under today's input keys are taken
        out first (run.execute.reusable): neither encoded nor computed, their stored results join
        the run's members."""
        from dataclasses import replace

        from .run.execute import execute, reusable

        from .run import likelihood

        plan = likelihood.checked(self.con, plan)  # minimal pairs refused before anything is scored
        stored = reusable(self.con, plan) if reuse else {}
        if stored:
            plan = replace(plan, pairs=tuple(p for i, p in enumerate(plan.pairs) if i not in stored))
        _, failed = self._encode_plan(plan, progress)
        plan, gone = plan.without(failed)
        then = None
        if families:  # each replicate family's summary rows, in the run's transaction (run.replicates)
            from .run.replicates import summaries_of
            then = summaries_of(families, plan.options)
        return execute(self.con, plan, command, on_result, on_failure, gone, study,
                       [r for ids in stored.values() for r in ids], family=reuse, then=then)

    def _plan_families(self, encoders, named: dict | None):
        """The encoder specs with each replicate family (`trained:NAME`, `replicates:NAME`) in its
        replicates, and the families (run.replicates.expand: a family of one is refused here,
        before anything is written)."""
        from .run.replicates import expand

        return expand(self.con, list(encoders), named)

    # ------------------------------------------------------------------ tests

    @store.all_or_nothing  # its sets, vectors and results commit together (store.journal)
    def test(self, tests: list[str] | None = None, *, encoders: list[str] = ("glove-6b-50d",), everything: bool = False,
             source: str | None = None, x: str | None = None, y: str | None = None, a: str | None = None,
             b: str | None = None, name: str = "adhoc", context: str | None = None, command: str = "library",
             options: Options | None = None, on_result=None, on_failure=None, progress=None, save: str | Path | None = None,
             cross_lingual: bool = False, rerun: bool = False, baseline: BaselineOptions | int | None = None,
             per_test=None, study: Study | None = None, replicates: dict[str, list[str]] | None = None,
             **option_values) -> RunReport:
        """Run tests (names or shell patterns over catalog and imported tests, or `everything`,
        or one ad-hoc test from four set names or SELECTs) on each encoder, in one run.
        `context="c-word"` runs sentence tests on each encoder's inserted-word vectors
        (`"c-word:<slot>"`: that slot's word, in sets of a multi-slot template set).
        Options as keywords (budget=, method=, alternative=, seed=, units=, bootstrap=,
        balance=, cut_seed=, cuts=, alpha=) or as a run.options.Options. A sentence test's
        units are its own (the catalog's published tests: sentences), else words. A set the tests name
        that the store lacks is generated first (and said so in the report's notes).

        An ad-hoc test is stored by its `name`, so `test([name])` runs it again; its context is
        word when all four sets are `list@word` names; `cross_lingual`: its targets and its
        attributes are in different languages on purpose (else such a test is refused). `save`: write
        the (single) test's definition as TOML, for a --catalog-dir folder. `rerun` (the report's
        recipe for one result): the ad-hoc test may carry an existing test's name, since its seed
        streams and cut derive from the name, and is not stored, so it never stands in for that test.
        `baseline`: K (or run.baseline.BaselineOptions) matched random pairs per result, stored and
        reused (see `Store.baseline`). `per_test(test)`: option values for one test alone (a
        study's [options."<pattern>"]: its units and alternative). `study`: the study in force,
        whose name and correction the run records beside its alpha (it joins no study's family).
        `replicates`: {NAME: [specs]}, the families an encoder `replicates:NAME` names (the
        study's [replicates] too); `trained:NAME` is the family `stimkit train` made: each
        replicate's results, and a summary per test (run.replicates)."""
        from .catalog import definitions as catalog
        from .run import cword, plan as run_plan
        from .run.options import Options

        self._writable("test")
        opts = options or Options(**option_values)
        if any((x, y, a, b)):
            if not all((x, y, a, b)):
                raise UsageError("an ad-hoc test needs all four of --x --y --a --b")
            adhoc = catalog.adhoc(name, (x, y, a, b), context, opts.balance or "none", opts.alternative, cross_lingual,
                                  opts.units)
            known = catalog.load(None, self.folders.catalog_dir)
            if name in known and not (self.folders.override or rerun):
                raise UsageError(f"ad-hoc test {name!r} has the name of a {known[name].source} test: choose another "
                                 "--name, or pass --override")
            chosen = [adhoc]
        else:
            if not (tests or everything):
                raise UsageError("name tests (or patterns), or pass --all, or give an ad-hoc test with --x --y --a --b")
            chosen = catalog.select(self.con, list(tests or []), everything, source, self.folders.catalog_dir)
            if context is not None:  # c-word runs a sentence test's inserted word
                chosen = [cword.in_context(t, context) for t in chosen]
        if save is not None:
            if len(chosen) != 1:
                raise UsageError(f"--save writes one test's definition; {len(chosen)} tests were chosen")
            Path(save).write_text(catalog.to_toml(chosen[0]), encoding="utf-8")
        specs, families = self._plan_families(encoders, {**(study.replicates if study else {}), **(replicates or {})})
        plan = run_plan.make(self.con, chosen, specs, opts, generate_missing=self._generate_missing,
                             per_test=per_test)
        if families:
            from .run.replicates import restrict
            plan, families = restrict(plan, families)
        plan = self._with_baselines(plan, baseline, opts.seed)
        report = self._execute(plan, command, progress, on_result, on_failure, _recorded(study, opts.alpha),
                               families=families)
        if report.run_id and any((x, y, a, b)) and not rerun:  # as defined; a re-run by name (in a context) keeps it so
            catalog.store_adhoc(self.con, chosen[0])
        return report

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def run(self, study: str | Path | Study = DEFAULT_PAPER, encoders: list[str] | None = None, *,
            options: Options | None = None, progress=None, on_result=None, on_failure=None,
            command: str | None = None, **option_values) -> StudyRun:
        """Run a study (`stimkit run`): a built-in paper (`may-2019`: the 46 SEAT tests, Holm,
        Table 4, the consistency checks and the WEFATs; `tan-celis-2019`: Tables 7 and 8) or a
        study file, through the same plan path as `test`: its tests in its contexts on each
        encoder (default: the study's), in one run; its correction over that run; its table."""
        import time

        from .study import study as studies

        started = time.perf_counter()
        self._writable("run")
        study = study if isinstance(study, studies.Study) else studies.load(study)
        folders = self._study_folders(study)
        return self._run(study, folders, encoders, options, progress, on_result, on_failure, command, started,
                         option_values)

    def _study_folders(self, study: Study) -> Folders:
        """The store's folders with the study's own where it names them, and its `override = true`:
        what `run`, `status`, `generate` in a study and a study's reading all read."""
        return self.folders.using(catalog_dir=study.catalog_dir, wordlist_dir=study.wordlist_dir,
                                  template_dir=study.template_dir, override=getattr(study, "override", False))

    def _study_tests(self, study: Study, folders: Folders, options, option_values):
        """What a study runs: its options (a flag's over the study's), its tests in its contexts,
        its WEFATs. One selection for `run` and `status`."""
        from fnmatch import fnmatchcase

        from .catalog import definitions as catalog
        from .catalog import wefat as wefat_defs
        from .run import cword
        from .run.options import Options

        from .encoders.likelihood import study_folders

        opts = options or Options(**{"alpha": study.alpha, **study.options, **option_values,  # its own variants too
                                     "variant_folders": tuple(str(f) for f in study_folders(study))})
        analysis.check_correction(study.correction)
        chosen = [t for t in catalog.select(self.con, list(study.tests) or ["*"], directory=folders.catalog_dir)
                  if study.paper is None or t.paper == study.paper]
        if study.paper is not None:
            catalog.by_paper(catalog.load_toml(), study.paper)  # an unknown paper is refused
        if "c-word" in study.contexts:
            chosen += [cword.in_context(t, "c-word") for t in chosen if t.context == "sentence"]
        if "own" not in study.contexts:
            chosen = [t for t in chosen if t.context == "c-word"]
        every = wefat_defs.load_catalog()
        wefats = list(every.values()) if "*" in study.wefat else [wefat_defs.get(n) for n in study.wefat]
        unmatched = [p for p, _ in study.per_test if not any(fnmatchcase(t.name, p) for t in chosen)]
        if unmatched:
            raise UsageError(f"{study.path or study.name}: [options.{unmatched[0]!r}] matches none of the study's tests")
        return opts, chosen, wefats

    def _run(self, study: Study, folders: Folders, encoders, options, progress, on_result, on_failure, command,
             started, option_values) -> StudyRun:
        import time

        from .run import plan as run_plan
        from .run.options import WefatOptions

        from dataclasses import replace

        from .run import crows_study

        named, rest = crows_study.split(self.con, list(study.tests))
        if named:  # its CrowS tests run apart (run.crows_study), the rest as a study without them
            crows = self._study_crows(study, named, encoders, options, option_values, command)
            if not rest:
                return self._crows_only(study, crows, started)
            study = replace(study, tests=tuple(rest))
        opts, chosen, wefats = self._study_tests(study, folders, options, option_values)
        specs, families = self._plan_families(encoders or study.encoders, study.replicates)
        plan = run_plan.make(self.con, chosen, specs, opts, wefats=wefats,
                             wefat_options=WefatOptions(budget=opts.budget, seed=opts.seed), cword_optional=True,
                             generate_missing=lambda specs: self._generate_missing(specs, folders),
                             per_test=lambda t: study.options_for(t.name))
        if families:
            from .run.replicates import restrict
            plan, families = restrict(plan, families)
        plan = self._with_baselines(plan, study.baseline, opts.seed, folders=folders)
        # recorded as typed (the CLI's `run`, replayed in the study's folder), else the call that
        # replays it; the study's name, alpha and correction go on the run (the defaults of reading it)
        report = self._execute(plan, command or f"run {study.path or study.name}", progress, on_result, on_failure,
                               {"study": study.name, "alpha": opts.alpha, "correction": study.correction}, reuse=True,
                               families=families)
        job = StudyRun(study, report, [n for n in plan.notes if n.startswith("generated")],
                       tests=[t.name for t in chosen])
        if report.run_id and (report.results or report.reused_results):  # its table's data; the views render it
            # the study's alpha and correction, unless an alpha was given for this run
            given = opts.alpha if options is not None or "alpha" in option_values else None
            job.results = self.results(run=report.run_id, alpha=given, study=study)
            job.family = job.results.family
            if study.checks and report.computed:  # nothing changed: the checks stand as `check` lists them
                job.checks = self.check(run=report.run_id, alpha=given, study=study)
        job.crows = crows if named else None
        job.seconds = time.perf_counter() - started
        return job

    def _study_options(self, study: Study, options, option_values):
        from .run.options import Options

        return options or Options(**{"alpha": study.alpha, **study.options, **option_values})

    def _study_crows(self, study: Study, named: list[str], encoders, options, option_values, command):
        """A study's CrowS tests on its scoring encoders with its seed: what is stored under
        today's inputs is reused, the rest scored and stored with one run recorded as the
        study's (run.crows_study). Returns run.crows_study.CrowsPart."""
        from . import encoders as encoders_
        from .encoders import token_scores
        from .run import crows, crows_study

        opts = self._study_options(study, options, option_values)
        specs = encoders or study.encoders
        resolved = crows_study.scoring(study, [encoders_.resolve(spec) for spec in specs], named)
        todo, reused = crows_study.plan(self.con, named, resolved, opts.seed, crows.pair_stats.RESAMPLES)
        part = crows_study.CrowsPart(None, [(n, e.spec) for n, e in todo], [(n, e.spec, r) for n, e, r in reused])
        found = [(n, e.fingerprint, r) for n, e, r in reused]
        if todo:
            texts = crows.texts_of(self.con, list(dict.fromkeys(n for n, _ in todo)))
            self._release()  # the model runs with the file closed, as `crows` and `encode` do
            for enc in dict.fromkeys(e for _, e in todo):
                token_scores.score_missing(None, enc, texts, None, path=self.path)
            part.run_id, _ = crows.run(self.con, list(dict.fromkeys(n for n, _ in todo)),
                                       list(dict.fromkeys(e for _, e in todo)), opts.seed,
                                       command or f"run {study.path or study.name}", crows.pair_stats.RESAMPLES,
                                       {"study": study.name, "alpha": opts.alpha, "correction": study.correction},
                                       only={(n, e.fingerprint) for n, e in todo})
            found += [(n, e.fingerprint, part.run_id) for n, e in todo]
        part.rows = crows_study.rows_of(self.con, found)
        return part

    def _crows_only(self, study: Study, crows, started) -> StudyRun:
        """A study whose tests are all CrowS tests: no association run, its CrowS part alone."""
        import time

        from .run.rows import RunReport

        job = StudyRun(study, RunReport(crows.run_id, [], [], study.alpha), tests=[])
        job.run.computed = crows.run_id is not None
        job.crows = crows
        job.seconds = time.perf_counter() - started
        return job

    def status(self, study: str | Path | Study = DEFAULT_PAPER, encoders: list[str] | None = None,
               **option_values) -> list:
        """What today's files change for a study (`stimkit status`, as `git status`), reading only:
        each set it needs (current, missing, or outdated: its files changed), each (test,
        encoder) result (current: stored under today's input key; missing; outdated: its sets or
        procedure changed) and, with a [baseline], each result's matched baseline. `run` makes
        exactly the rows that are not current. Returns run.status.StatusRow rows."""
        from .run import status as run_status
        from .study import study as studies

        from dataclasses import replace

        from .run import crows_study

        study = study if isinstance(study, studies.Study) else studies.load(study)
        folders = self._study_folders(study)
        named, rest = crows_study.split(self.con, list(study.tests))
        crows_rows = []
        if named:  # its CrowS tests: stored under today's import, encoder and seed, or not
            from . import encoders as encoders_
            from .run import crows

            seed = self._study_options(study, None, option_values).seed
            resolved = crows_study.scoring(study, [encoders_.resolve(spec) for spec in (encoders or study.encoders)],
                                           named)
            crows_rows = crows_study.status(self.con, named, resolved, seed, crows.pair_stats.RESAMPLES)
            if not rest:
                return crows_rows
            study = replace(study, tests=tuple(rest))
        opts, chosen, _ = self._study_tests(study, folders, None, option_values)
        specs, families = self._plan_families(encoders or study.encoders, study.replicates)
        return run_status.of_study(self.con, study, chosen, specs, opts, folders, families) + crows_rows

    # ------------------------------------------------------------------ baselines

    def _baseline_inputs(self, folders: Folders | None = None):
        """Where a baseline renders its drawn words: the template sets and word lists of
        `folders` (default the store's), within the store's render limits."""
        from .run.baseline import Inputs

        folders = folders or self.folders
        return Inputs(folders.template_set, folders.lists, self.limits)

    def _with_baselines(self, plan: Plan, baseline, seed: int, keep_tests: bool = True,
                        folders: Folders | None = None) -> Plan:
        from .run.baseline import BaselineOptions, with_baselines

        if baseline is None or baseline == 0:
            return plan
        if isinstance(baseline, dict):  # a study's [baseline] table
            baseline = BaselineOptions(**{"seed": seed, **baseline})
        b = baseline if isinstance(baseline, BaselineOptions) else BaselineOptions(sets=baseline, seed=seed)
        return with_baselines(self.con, plan, b, self._baseline_inputs(folders), keep_tests)

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def baseline(self, tests: list[str], *, encoders: list[str] = ("glove-6b-50d",), sets: int = 1000, seed: int = 0,
                 tolerance: float = 0.25, vocabulary: str | Path | None = None, language: str | None = None,
                 command: str = "library", options: Options | None = None, progress=None, on_failure=None,
                 per_test=None, study: Study | None = None, replicates: dict[str, list[str]] | None = None,
             **option_values) -> RunReport:
        """Matched random baselines (`stimkit baseline`): for each test and encoder, `sets` (K)
        random pairs of target sets, each word matched to a target word on frequency (Zipf within
        `tolerance`), subword count and kind, drawn from `vocabulary` (a file of words; default
        wordfreq's list for `language`), rendered through the test's templates and run through its
        procedure (the options, as for `test`). Stored and reused: the same test, encoder, set
        versions, K, seed and procedure are computed once. No test result is stored; the report's
        `baselines` hold the observed d, its percentile among the random d, the share of random
        pairs rejected at alpha, and d of X and of Y against their own random sets."""
        from .catalog import definitions as catalog
        from .run import plan as run_plan
        from .run.baseline import BaselineOptions
        from .run.options import Options

        self._writable("baseline")
        opts = options or Options(**option_values)
        b = BaselineOptions(sets=sets, seed=seed, tolerance=tolerance,
                            vocabulary=str(vocabulary) if vocabulary is not None else None, language=language)
        if not tests:
            raise UsageError("name the tests (or patterns) to draw a baseline for")
        chosen = catalog.select(self.con, list(tests), directory=self.folders.catalog_dir)
        plan = run_plan.make(self.con, chosen, list(encoders), opts, generate_missing=self._generate_missing,
                             per_test=per_test)  # a study's [options."<pattern>"], as `test` takes them
        plan = self._with_baselines(plan, b, seed, keep_tests=False)
        return self._execute(plan, command, progress, None, on_failure, _recorded(study, opts.alpha))

    # ------------------------------------------------------------------ results

    def results(self, where: str | None = None, run: str | None = None, correct: str | None = None,
                alpha: float | None = None, include_stale: bool = False, kind: str = "test",
                baseline: tuple[int, int] | None = None, study: Study | None = None,
                whole_store: bool = False) -> FamilyFrame:
        """The family's results with adjusted p (`correct`: holm | bonferroni | bh | by | none),
        carrying their family (`.family`: its definition, m, alpha, correction, and how many
        stale results it left out). `kind`: audit or compare results instead of the tests you
        ran. `correct`, `alpha` not given: the study's whose runs make the family (all
        agreeing), else holm at 0.01; `.family.settings` says which. `study`: the study in force
        (a Study), whose alpha, correction and baseline apply where none is given. `baseline`:
        (K, seed) of the study's matched baselines, read first. With a `study` and no `run`, the
        family is the study's (its latest run's results, computed or reused unchanged); other
        results of the store are counted apart (`.family.outside`) unless `whole_store`."""
        rel, family = self._corrected(where, run, correct, alpha, include_stale, kind, baseline, study, whole_store)
        return _framed(store.as_frame(rel), family)

    def result_rows(self, where: str | None = None, run: str | None = None, correct: str | None = None,
                    alpha: float | None = None, include_stale: bool = False, kind: str = "test",
                    baseline: tuple[int, int] | None = None, study: Study | None = None,
                    whole_store: bool = False) -> analysis.FamilyRows:
        """`results` as plain rows (plain.Rows: Python values, no polars frame), for a reading
        that only prints them; the same query, so the same rows in the same order."""
        rel, family = self._corrected(where, run, correct, alpha, include_stale, kind, baseline, study, whole_store)
        rows = Rows.of(rel)
        return analysis.FamilyRows(rows.columns, rows.types, rows.rows, family)

    def _corrected(self, where, run, correct, alpha, include_stale, kind, baseline, study, whole_store=False):
        if baseline is None and study is not None:
            baseline = study.baseline_key
        family = analysis.define_family(self.con, where, alpha, run, include_stale=include_stale, kind=kind,
                                        correct=correct, baseline=baseline, study=_defaults(study),
                                        whole_store=whole_store)
        # a study's own reading (not one run's, which `run` just made) says whether its files moved on
        return analysis.corrected_relation(self.con, family.correction), \
            self._drift(family, study) if run is None else family

    def _drift(self, family: analysis.Family, study: Study | None) -> analysis.Family:
        """The family with the study's sets that today's files no longer give (Family.drift): its
        results were made from older files, which a reading says (reads only: keys, no render)."""
        if study is None or study.path is None:
            return family
        from dataclasses import replace

        from .stimuli import current

        try:
            folders = self._study_folders(study)
            _, chosen, _ = self._study_tests(study, folders, None, {})
            specs = list(dict.fromkeys(s for t in chosen for s in t.set_specs()))
            states = current.states(self.con, specs, folders.lists(), folders.template_set)
        except StimkitError:  # a broken file is said by the command that reads it; a reading still reads
            return family
        return replace(family, drift=tuple(st.spec.name for st in states if st.status != "current"))

    def check(self, where: str | None = None, run: str | None = None, alpha: float | None = None,
              include_stale: bool = False, study: Study | None = None, whole_store: bool = False) -> FamilyFrame:
        """Every consistency comparison the family allows, with its verdict (at `alpha`; not
        given: as `results`), carrying the family (`.family`)."""
        from .analysis.consistency import consistency

        family = analysis.define_family(self.con, where, alpha, run, allow_empty=True, include_stale=include_stale,
                                        study=_defaults(study), whole_store=whole_store)
        return _framed(consistency(self.con, family.alpha), self._drift(family, study) if run is None else family)

    def check_metrics(self, where: str | None = None, run: str | None = None, alpha: float | None = None,
                      include_stale: bool = False, study: Study | None = None
                      ) -> tuple[FamilyFrame, FamilyFrame]:
        """How far the association metrics agree over the family: per test and encoder, whether
        they agree in sign and decision; over the family, Kendall's tau of each pair of metrics
        (their bias strength over the tests and encoders both measured). Both carry the family (`.family`)."""
        from .stats import metrics

        family = analysis.define_family(self.con, where, alpha, run, allow_empty=True,
                                        include_stale=include_stale, values=True, study=_defaults(study))
        df = store.frame(self.con, "SELECT test, encoder, coalesce(metric, 'weat') AS metric, "
                                   "CASE WHEN coalesce(metric, 'weat') = 'weat' THEN effect_size ELSE statistic END AS value, "
                                   "p_value AS p FROM family ORDER BY test, encoder, metric")
        if df.height == 0:
            return _framed(df, family), _framed(df, family)
        return (_framed(metrics.sign_agreement(df, family.alpha), family),
                _framed(metrics.kendall_tau_matrix(df, by_strength=True), family))

    # ------------------------------------------------------------------ replicates and reliability

    def replicate_summaries(self, run: str | None = None, encoder: str | None = None) -> pl.DataFrame:
        """The stored summaries of replicate families (db/034: a row per run, test and family;
        run.replicates), newest first; of one run, or one family's encoder (`trained:NAME`)."""
        from .run import replicates

        return replicates.stored(self.con, run, encoder)

    @store.all_or_nothing
    def reliability(self, where: str | None = None, run: str | None = None, encoders: list[str] | None = None,
                    replicates: dict[str, list[str]] | None = None, level: float = 0.95, seed: int = 0,
                    command: str = "library", include_stale: bool = False) -> tuple[str, pl.DataFrame]:
        """Du et al.'s reliability of the results selected as `results` selects them (`where`,
        `run`; `encoders`: only these encoders, a family spec standing for its replicates, whose
        seeds are test-retest's raters): ICC(2,1) and ICC(2,k) across seeds, ICC(3,1) across
        scoring rules, Cronbach's alpha and split-half across the words of each list, each with
        its interval (run.reliability says what the subjects and raters are). Computed and
        stored (db/034 reliability_results) under a run of its own; returns (run id, rows)."""
        from .run import reliability as rel
        from .run.replicates import expand, fingerprint_of, is_family

        self._writable("reliability")
        if not 0 < level < 1:
            raise UsageError(f"--level must lie in (0, 1), not {level}")
        members = None
        if encoders:
            specs, families = expand(self.con, list(encoders), replicates)
            members = {}
            for fam in families:
                members.update({fingerprint_of(self.con, m.spec): (fam.encoder, m.kind) for m in fam.members})
            plain = [s for s in encoders if not is_family(s)]
            members.update({fingerprint_of(self.con, s): ("selection", "seed") for s in plain})
        analysis.define_family(self.con, where, None, run, allow_empty=True, include_stale=include_stale, values=True,
                               whole_store=True)
        found = rel.compute(self.con, members, level, seed)
        if not any(c.value is not None for c in found):
            raise InputError("the selection allows no reliability coefficient: test-retest needs 2 seeds of a test and "
                             "3 words, inter-rater 2 scoring rules (--metric) on 3 results, internal consistency 3 "
                             "results of a test (replicates or encoders) and 2 words a list")
        with store.transaction(self.con):
            run_id = store.start_run(self.con, command, seed)
            rows = rel.rows_of(run_id, found)
            rel.write(self.con, rows)
        return run_id, rel.stored(self.con, run_id)

    def reliability_results(self, run: str | None = None) -> pl.DataFrame:
        """The coefficients `reliability` stored: of one run, else of its latest run."""
        from .run import reliability as rel

        return rel.stored(self.con, run)

    def retire(self, where: str, reason: str) -> int:
        """Take the results matching `where` (an SQL condition on `results`) out of every
        family, keeping them and the reason; returns how many were retired."""
        self._writable("retire")
        if not reason or not reason.strip():
            raise UsageError("say why: --reason TEXT (it is kept with the retired results)")
        ids = self._result_ids(where)
        with store.transaction(self.con):
            self.con.execute("INSERT INTO result_retirements (result_id, reason) SELECT unnest(?::VARCHAR[]), ? "
                             "ON CONFLICT DO NOTHING", [ids, reason.strip()])
        return len(ids)

    def unretire(self, where: str) -> int:
        """Bring retired results matching `where` back into the families; returns how many."""
        self._writable("unretire")
        ids = self._result_ids(where)
        n = store.one(self.con, "SELECT count(*) FROM result_retirements WHERE result_id IN (SELECT unnest(?::VARCHAR[]))",
                      [ids])[0]
        with store.transaction(self.con):
            self.con.execute("DELETE FROM result_retirements WHERE result_id IN (SELECT unnest(?::VARCHAR[]))", [ids])
        return n

    def _result_ids(self, where: str) -> list[str]:
        import duckdb

        sql = usersql.check_select(f"SELECT result_id FROM result_hypotheses WHERE ({where})", f"--where {where!r}")
        try:
            return [r for (r,) in store.rows(self.con, sql)]
        except duckdb.Error as e:
            raise InputError(f"--where {where!r}: {usersql.first_line(e)}") from None

    def query(self, sql: str, params: dict | None = None, where: str | None = None, run: str | None = None,
              alpha: float | None = None, study: Study | None = None) -> FamilyFrame:
        """A named query (queries/NAME.sql) or one reading statement with named parameters
        ($name); the temp view `family` (see `results`) is defined first, and the answer
        carries it (`.family`). Host files are reachable only from a store opened with
        allow_files=True."""
        family = analysis.define_family(self.con, where, alpha, run, allow_empty=True, study=_defaults(study))
        sql = usersql.check_reading(analysis.named_query(sql) or sql)
        return _framed(usersql.read(self.con, sql, params), family)

    def has_study_run(self, study: str | Path | Study) -> bool:
        """Whether the store holds a run of this study (`Store.run` records its name)."""
        try:
            self.study_run(study)
        except UsageError:
            return False
        return True

    def study_run(self, study: str | Path | Study) -> str:
        """The id of a study's latest run (`Store.run` records the study's name)."""
        from .study import study as studies

        study = study if isinstance(study, studies.Study) else studies.load(study)
        found = store.latest_study_run(self.con, study.name)  # its family: the run's members (db/024)
        # a store before db/024: the runs recorded with the study's name
        row = (found,) if found else store.one(
            self.con, "SELECT run_id FROM runs WHERE study = ? OR command = ? OR starts_with(command, ?) "
                      "ORDER BY started_at DESC, run_id DESC LIMIT 1", [study.name, f"run {study.name}", f"run {study.name} ("])
        if row is None:
            raise UsageError(f"study {study.name!r} has no run in {self.path} (run `stimkit run {study.path or study.name}`)")
        return row[0]

    def report(self, out_dir: str | Path = "report", where: str | None = None, correct: str | None = None,
               alpha: float | None = None, formats: list[str] | None = None, tests: list[str] | None = None,
               audits: bool = False, force: bool = False, study: str | Path | Study | None = None,
               display: dict[str, str] | None = None, heads: str | None = None,
               baseline: tuple[int, int] | None = None):
        """Write out_dir/report.html (figures inline), figures/ and tables/ from the store
        (reads only). Returns report.Written; its `notes` say what was asked for but absent.
        `study`: the study's latest run. `correct`, `alpha` not given: the study's (that of the
        family's runs, as `results`), else holm at 0.01. `display` (encoder -> name) and `heads`
        ("category": Table 4's rows under the tests' categories): default the study's."""
        if study is not None:
            from .study import study as studies

            study = study if isinstance(study, studies.Study) else studies.load(study)
            run_id = self.study_run(study)
            # the family of the run: the latest result of each hypothesis within it (a later `test`
            # of one of its hypotheses does not take that result out of the study's report)
            scope = (f"(run_id = '{run_id}' OR result_id IN (SELECT result_id FROM run_results WHERE run_id = '{run_id}'))"
                     + (f" AND ({where})" if where else ""))
            correct = correct if correct is not None else study.correction
            alpha = alpha if alpha is not None else study.alpha
            baseline = baseline if baseline is not None else study.baseline_key
        try:  # matplotlib is an extra: the rest of the library works without it
            from . import report
        except ImportError as e:
            raise StimkitError(f"the report needs {e.name}: pip install 'stimkit[report]'") from None
        display = display if display is not None else (study.display if study is not None else None)
        data = report.gather(self.con, where, correct, alpha, tests, audits, baseline,
                             run=run_id if study is not None else None, study=study, display=display)
        heads = heads or (study.heads if study is not None else "test")
        if heads == "category":
            data.categories = analysis.categories(self.con)
        data.left_out = analysis.left_out(self.con, scope if study is not None else where,
                                          run_id if study is not None else None)
        self._release()  # drawing takes seconds: let writers in
        written = report.write_report(data, Path(out_dir), formats, force)
        if audits and not data.audits and data.wording is None:
            written.notes.append("no template audits" + (f" of {', '.join(tests)}" if tests else "")
                                 + " (run `stimkit audit templates`)")
        return written

    # ------------------------------------------------------------------ audits and WEFAT

    def _audit_plan(self, tests: list[str], encoders, template_sets: list[str] | None, opts: Options, progress,
                    min_template_sets: int = 1, procedure: Procedure | None = None):
        """The audit's plan (re-templated tests, their sets generated and selected once), encoded;
        each test under its own per-test options of the study (`procedure`)."""
        from .catalog import definitions as catalog
        from .run import audit, plan as run_plan

        chosen = [catalog.get(self.con, n, self.folders.catalog_dir) for n in tests]
        audited = audit.audited(chosen, template_sets, min_template_sets)
        original = {audit.retemplate(t, s).name: t.name for t, s in audited}
        plan = run_plan.make(self.con, [audit.retemplate(t, s) for t, s in audited], list(encoders), opts,
                             generate_missing=self._generate_missing,
                             per_test=procedure.per_test(lambda t: original.get(t.name, t.name)) if procedure else None)
        if plan.refused:  # an audit is one whole: refused before anything is encoded
            raise plan.refused[0].as_error()
        _, failed = self._encode_plan(plan, progress)
        if failed:
            raise InputError(next(iter(failed.values())))
        return audit.AuditPlan(tuple(audited), plan)

    def study_alpha(self, tests: list[str]) -> float:
        """The alpha of the study whose runs hold these tests' latest results (studies agreeing),
        else the default: what reading them would use."""
        quoted = ", ".join("'" + t.replace("'", "''") + "'" for t in tests)
        return analysis.define_family(self.con, f"test IN ({quoted})" if tests else None, allow_empty=True).alpha

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def audit(self, tests: list[str] | None = None, encoders: list[str] | None = None,
              template_sets: list[str] | None = None, alpha: float | None = None, command: str = "library",
              on_audit=None, progress=None, procedure: Procedure | None = None,
              **option_values) -> tuple[str, list[Audit]]:
        """Template audits (see stimkit.run.audit) of any test whose sets come from templates,
        under each template set (built-in or yours; default: the test's own): per template
        alone and left out, the pooled d of words and templates as random factors, flip rates and word influence.
        `procedure` (run.options.procedure): the study's options, encoders and per-test options;
        `alpha` not given: the procedure's, else that of the study that ran the tests (as
        `results` reads them), else 0.01."""
        from .run import audit

        self._writable("audit")
        tests = tests or audit.caliskan_sentence_tests()
        proc = _procedure(procedure, encoders, option_values, ("minilm",))
        alpha = _alpha(alpha, proc, lambda: self.study_alpha(tests))
        opts = proc.analysis(alpha)
        plan = self._audit_plan(tests, proc.encoders, template_sets, opts, progress, procedure=proc)
        return audit.run_templates(self.con, plan, alpha, command, on_audit, proc.run_fields(alpha))

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def audit_compare(self, tests: list[str], template_sets: list[str], encoders: list[str] | None = None,
                      alpha: float | None = None, command: str = "library", progress=None,
                      procedure: Procedure | None = None, **option_values) -> tuple[str, pl.DataFrame]:
        """The same tests under each template set: d, its shift and flips against the first set."""
        import polars as pl

        from .run import audit

        self._writable("audit")
        proc = _procedure(procedure, encoders, option_values, ("minilm",))
        alpha = _alpha(alpha, proc, lambda: self.study_alpha(tests))
        opts = proc.analysis(alpha)
        if len(template_sets) < 2:  # before any set is generated or encoded
            raise UsageError("compare needs at least two template sets")
        plan = self._audit_plan(tests, proc.encoders, template_sets, opts, progress, min_template_sets=2,
                                procedure=proc)
        run_id, rows = audit.run_compare(self.con, plan, alpha, command, proc.run_fields(alpha))
        return run_id, pl.DataFrame(rows)

    def audits(self, where: str | None = None, top: int = 3,
               alpha: float | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Stored audits (pooled d, tau2, I2, flip rates at `alpha`, None: each audit's own) and
        the `top` templates of each: those that flip the decision first, then by shift."""
        from .analysis.stored import audit_summary

        return audit_summary(self.con, where, top, alpha)

    def perturbation_families(self, tests: list[str] | None, rules: list[str] | None = None,
                              max_variants: int | None = None, study: str | Path | Study | None = None) -> dict:
        """Each test's template set's perturbation family (stimuli.perturb.plan), from the text
        alone: its size is known, and bounded, before anything renders. `study` (without
        `tests`): its sentence tests."""
        from .run.wording import check_max_variants, perturbed_set
        from .stimuli import perturb

        check_max_variants(max_variants)
        chosen = self._perturbed_tests(tests, study)
        return {s: perturb.plan(self.folders.template_set(s), limit=max_variants, only=rules, limits=self.limits)
                for s in dict.fromkeys(perturbed_set(t) for t in chosen)}

    def _perturbed_tests(self, tests: list[str] | None, study) -> list:
        """The tests a wording audit rewords: those named, else the study's sentence tests."""
        from .catalog import definitions as catalog

        if tests:
            return [catalog.get(self.con, n, self.folders.catalog_dir) for n in tests]
        if study is None:
            raise UsageError("audit perturb needs tests: --test/-t (repeatable) or a study (--study, or study.toml "
                             "in this folder or above)")
        st = _study(study)
        chosen = [t for t in catalog.select(self.con, list(st.tests) or ["*"], directory=self.folders.catalog_dir)
                  if t.context == "sentence"]
        if not chosen:
            raise UsageError(f"study {st.path or st.name}: no sentence test to reword")
        return chosen

    @store.all_or_nothing  # its sets, vectors and audits commit together (store.journal)
    def audit_perturb(self, tests: list[str] | None = None, encoders: list[str] | None = None, *,
                      study: str | Path | Study | None = None, alpha: float | None = None,
                      rules: list[str] | None = None, max_variants: int | None = None, command: str = "library",
                      on_family=None, on_audit=None, progress=None, procedure: Procedure | None = None,
                      **option_values):
        """Wording audits (stimkit.run.wording): each test under its template set and every
        meaning-preserving rewording of it (stimuli.perturb), on each encoder. `study` (without
        `tests`): its sentence tests. `procedure` (run.options.procedure): the options, encoders,
        alpha and per-test options (default: the study's, flags over it), so the original's d
        and p are the study's run's. Returns (run_id, audits, rankings, families)."""
        from .run import plan as run_plan, wording
        from .stimuli import generate, perturb

        self._writable("audit")
        wording.check_max_variants(max_variants)
        chosen = self._perturbed_tests(tests, study)
        if procedure is None and study is not None:
            from .run.options import procedure as resolve

            procedure = resolve(_study(study))
        proc = _procedure(procedure, encoders, option_values, ("minilm",))
        alpha = _alpha(alpha, proc, lambda: self.study_alpha([t.name for t in chosen]))
        opts = proc.analysis(alpha)
        lists = self.folders.lists()
        families, tsets, provenance = {}, {}, []
        with wording.variants_folder() as tmp:  # removed on exit, killed or not (store.staging.scratch)
            for name in dict.fromkeys(wording.perturbed_set(t) for t in chosen):
                tset = self.folders.template_set(name)
                family = perturb.plan(tset, limit=max_variants, only=rules, limits=self.limits)  # nothing rendered yet
                words = [tset.inflected(w) for t in chosen if wording.perturbed_set(t) == name
                         for s in t.set_specs() if s.wordlist in lists for w in lists[s.wordlist].words]
                candidates = perturb.materialize(family, tset, Path(tmp) / f"{name}.candidates")
                family = wording.require_variants(perturb.check(family, tset, candidates, words, self.limits))
                tsets[name] = tset
                tsets.update(perturb.materialize(family, tset, Path(tmp) / name))
                provenance += [row for v in family.variants for row in perturb.provenance(v, tsets[v.name])]
                families[name] = family
                if on_family:
                    on_family(family)
            original = {vt.name: t.name for t in chosen
                        for vt in wording.variant_tests(t, families[wording.perturbed_set(t)])}
            tests_all = [vt for t in chosen for vt in wording.variant_tests(t, families[wording.perturbed_set(t)])]
            specs = list(dict.fromkeys(s for t in tests_all for s in t.set_specs()))
            generate.generate(self.con, specs, lists, tsets, limits=self.limits)
        # the variants' sets were rendered just now from their temporary template sets, which no
        # folder holds: nothing to key or render again (stimuli.current)
        plan = run_plan.make(self.con, tests_all, list(proc.encoders), opts, generate_missing=None,
                             per_test=proc.per_test(lambda t: original.get(t.name, t.name)))
        if plan.refused:
            raise plan.refused[0].as_error()
        _, failed = self._encode_plan(plan, progress)
        if failed:
            raise InputError(next(iter(failed.values())))
        wplan = wording.WordingPlan(tuple(chosen), families, plan, tuple(provenance))
        run_id, audits, rankings = wording.run(self.con, wplan, alpha, command, on_audit, proc.run_fields(alpha))
        return run_id, audits, rankings, families

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def ceat(self, tests: list[str], encoders: list[str] | None = None, *, context: str | None = "c-word",
             samples: int = 10000, seed: int | None = None, progress=None, command: str = "library",
             procedure: Procedure | None = None, on_row=None, **option_values) -> list:
        """CEAT's combined effect size (stats.ceat; Guo & Caliskan 2021) of each test on each
        encoder (default context c-word: a word's vector in each of its contexts), beside
        stimkit's d and p over every context and the crossed model's d. `procedure`
        (run.options.procedure): the study's encoders, seed, options and per-test options (`seed`,
        `encoders` and option keywords over it). Vectors missing are encoded; the rows are
        stored in `ceat_results` with their run. Returns run.ceat.CeatRow rows."""
        from .catalog import definitions as catalog
        from .run import ceat, cword, plan as run_plan

        self._writable("ceat")
        ceat.check_samples(samples)
        proc = _procedure(procedure, encoders, {**option_values, "seed": seed}, ("minilm",))
        chosen = [cword.in_context(catalog.get(self.con, n, self.folders.catalog_dir), context) for n in tests]
        plan = run_plan.make(self.con, chosen, list(proc.encoders), proc.analysis(),
                             generate_missing=self._generate_missing, per_test=proc.per_test())
        if plan.refused:
            raise plan.refused[0].as_error()
        _, failed = self._encode_plan(plan, progress)
        if failed:
            raise InputError(next(iter(failed.values())))
        _, rows = ceat.run(self.con, plan.pairs, samples, proc.seed, command, proc.run_fields(), on_row)
        return rows

    def wording_audits(self, where: str | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Stored wording audits (a row per test x encoder) and the rankings across encoders."""
        from .analysis.stored import wording_summary

        return wording_summary(self.con, where)

    def wording_variants(self, where: str | None = None) -> pl.DataFrame:
        """Every variant of the stored wording audits `where` selects: d, p, relative change, flips."""
        from .analysis.stored import wording_variants

        return wording_variants(self.con, where)

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def wefat(self, name: str | None = None, encoder: str | None = None, *, targets: str | None = None,
              a: str | None = None, b: str | None = None, property: str | None = None, label: str = "adhoc",  # noqa: A002
              context: str | None = None, templates: str = "may2019", progress=None, command: str | None = None,
              procedure: Procedure | None = None, **option_values) -> WefatResult:
        """A WEFAT from the catalog (queries/wefat.toml) by `name`, or ad hoc from `targets`,
        `a`, `b` and `property`, on one encoder (default: the procedure's first, else
        glove-6b-50d); returns the stored WefatResult with its items. `procedure`
        (run.options.procedure): the study's seed and budget, as `run` gives its WEFATs (option
        keywords over them), and its name, alpha and correction on the run."""
        from .catalog import wefat as wefat_defs
        from .run import plan as run_plan
        from .run.options import Options, WefatOptions

        self._writable("wefat")
        proc = _procedure(procedure, [encoder] if encoder else None, {}, ("glove-6b-50d",))
        test = wefat_defs.define(name, targets, a, b, property, label, context, templates)
        study_values = {k: v for k, v in proc.values.items() if k in ("budget", "seed")}
        opts = WefatOptions(**{**study_values, **{k: v for k, v in option_values.items() if v is not None}})
        plan = run_plan.make(self.con, [], [proc.encoders[0]], Options(budget=opts.budget, seed=opts.seed),
                             wefats=[test], wefat_options=opts, generate_missing=self._generate_missing)
        if plan.refused:
            raise plan.refused[0].as_error()
        report = self._execute(plan, command or f"wefat {test.name}", progress, study=proc.run_fields())
        if report.failures:
            raise report.failures[0].as_error()
        return report.wefats[0]

    def wefat_results(self, where: str | None = None, words: bool = False) -> pl.DataFrame:
        """Stored WEFAT results (default: the latest run), or with `words` their per-word rows."""
        from .analysis.stored import wefat_results

        return wefat_results(self.con, where, words)

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def debias_compare(self, tests: list[str], debiased: list[str] | None = None, base: str | None = None,
                       progress=None, on_result=None, command: str = "debias compare",
                       procedure: Procedure | None = None, **option_values) -> tuple[RunReport, list]:
        """Before and after (analysis.debias): `tests` on the base encoder and on each debiased
        one (`glove-6b-50d,debias=hard`), in one run; the base is the debiased encoders' own
        (`base`, if given, must be it). `procedure` (run.options.procedure): the study's seed,
        budget, units, alpha and per-test options; `debiased` not given: the study's encoders
        that are debiased. The results are stored as kind 'debias' (exploratory: in no family of
        the study's tests). Returns the run's report and a BeforeAfter row per result."""
        from . import encoders
        from .analysis.debias import before_after
        from .catalog import definitions as catalog
        from .run import debias, plan as run_plan
        from .run.rows import RunReport

        self._writable("debias")
        proc = _procedure(procedure, debiased, option_values, ())
        specs = list(debiased or [e for e in proc.encoders if "debias=" in e])
        derived = [encoders.resolve(spec) for spec in specs]
        bases = {getattr(e, "base", None) and e.base.fingerprint for e in derived}
        if None in bases or not derived:
            raise UsageError("name debiased encoders (a spec with debias=<method>, e.g. glove-6b-50d,debias=hard)")
        if len(bases) > 1 or (base is not None and encoders.resolve(base).fingerprint not in bases):
            raise UsageError("the debiased encoders must share one base encoder (the one they were derived from)")
        base_spec = base or derived[0].base.spec
        if not tests:
            raise UsageError("name the tests (or patterns) to compare")
        chosen = catalog.select(self.con, list(tests), directory=self.folders.catalog_dir)
        opts = proc.options(("cuts",), metrics=("weat",))
        plan = run_plan.make(self.con, chosen, [base_spec, *specs], opts, generate_missing=self._generate_missing,
                             per_test=proc.per_test())
        if plan.refused:  # before and after is one table: a test or encoder that cannot run stops it
            raise plan.refused[0].as_error()
        _, failed = self._encode_plan(plan, progress)
        if failed:
            raise InputError(next(iter(failed.values())))
        run_id, results = debias.compare(self.con, plan, command, proc.run_fields(opts.alpha))
        report = RunReport(run_id, results, [], opts.alpha, plan.n_tests, plan.n_encoders, notes=list(plan.notes))
        return report, before_after(self.con, results, next(iter(bases)))

    @store.all_or_nothing  # its sets, vectors and rows commit together (store.journal)
    def debias_check(self, specs: list[str] | None = None, n: int = 500, seed: int | None = None,
                     resamples: int = 200, command: str = "library", procedure: Procedure | None = None,
                     protocol: str = "gonen-goldberg") -> tuple[str, dict[str, list]]:
        """`debias_checks` of each debiased encoder (`specs`, else the study's debiased encoders;
        `seed`, else the procedure's), stored in `debias_checks` with their run (its study,
        alpha and correction). Returns (run_id, {spec: rows})."""
        from .run import debias

        self._writable("debias")
        proc = _procedure(procedure, specs, {"seed": seed}, ())
        chosen = list(specs or [e for e in proc.encoders if "debias=" in e])
        if not chosen:
            raise UsageError("name debiased encoders: --encoder/-e (a spec with debias=<method>, "
                             "e.g. glove-6b-50d,debias=hard)")
        found = _checked_encoders(chosen, n, proc.seed, resamples, protocol)
        with store.transaction(self.con):
            run_id = store.start_run(self.con, command, proc.seed, **proc.run_fields())
            for enc, rows in found.values():
                store.insert(self.con, "debias_checks", debias.records(rows, run_id, enc, n, resamples))
        return run_id, {spec: rows for spec, (_, rows) in found.items()}

    # ------------------------------------------------------------------ CrowS-Pairs (issue 51)

    def import_crows(self, path: str | Path, name: str | None = None, any_bias_type: bool = False) -> dict:
        """A CrowS-Pairs CSV (catalog.crows): every field kept (`crows_pairs`), the sentences as the
        sets <name>/more and <name>/less, and the test `name` (default crows-pairs) that `crows`
        runs. The whole file is checked first; a bad one stores nothing. `any_bias_type`: accept
        bias types other than the published nine."""
        from .catalog import crows

        self._writable("import crows-pairs")
        return crows.import_file(self.con, Path(path), name or crows.DEFAULT_NAME,
                                 None if any_bias_type else crows.BIAS_TYPES)

    def crows_tests(self) -> dict[str, str]:
        """{name: import version} of the imported CrowS tests."""
        from .catalog import crows

        return crows.tests(self.con)

    @store.all_or_nothing  # its token rows and results commit together (store.journal)
    def crows(self, tests: list[str] | None = None, encoders: list[str] | None = None, *, seed: int | None = None,
              resamples: int = 2000, command: str = "library", procedure: Procedure | None = None,
              progress=None) -> tuple[str, list]:
        """The likelihood test over CrowS pairs (run.crows) on each scoring encoder: every scoring
        variant of the encoder's kind (causal: sum, mean; masked: nangia, biasbench, aul, pll),
        the metric score (% of pairs whose sent_more scores higher; 50: no preference) with a
        bootstrap interval over pairs (seeded), by direction and by bias type. Stored in
        `crows_results` and `crows_pair_scores` with one run. Returns (run id, run.crows.CrowsRow rows)."""
        from . import encoders as encoders_
        from .encoders import token_scores
        from .run import crows

        self._writable("crows")
        if resamples < 0:
            raise UsageError(f"resamples must be >= 0, not {resamples}")
        proc = _procedure(procedure, encoders, {"seed": seed}, ("smollm2-135m",))
        known = self.crows_tests()
        chosen = list(tests or ["crows-pairs"])
        for name in chosen:
            if name not in known:
                raise UsageError(f"no CrowS test {name!r}: import one with `stimkit import crows-pairs FILE`")
        resolved = [encoders_.resolve(spec) for spec in proc.encoders]
        for enc in resolved:
            crows.check_encoder(enc, chosen[0])
        texts = crows.texts_of(self.con, chosen)
        self._release()  # the model runs with the file closed (opened for each append), as encode does
        for enc in resolved:
            token_scores.score_missing(None, enc, texts, progress, path=self.path)
        return crows.run(self.con, chosen, resolved, proc.seed, command, resamples, proc.run_fields())

    def crows_study_results(self, study: str | Path | Study, encoders: list[str] | None = None
                            ) -> tuple[pl.DataFrame | None, list[tuple[str, str]]]:
        """A study's CrowS rows: for each of its CrowS tests on each of its encoders, the rows
        stored under today's import, encoder fingerprint, the study's seed and resamples (what
        `run` reuses; run.crows_study). Returns (rows, [(test, encoder)] with none stored)."""
        from . import encoders as encoders_
        from .run import crows, crows_study
        from .study import study as studies

        study = study if isinstance(study, studies.Study) else studies.load(study)
        named, _ = crows_study.split(self.con, list(study.tests))
        seed = self._study_options(study, None, {}).seed
        resolved = crows_study.scoring(study, [encoders_.resolve(spec) for spec in (encoders or study.encoders)],
                                       named) if named else []
        _, found = crows_study.plan(self.con, named, resolved, seed, crows.pair_stats.RESAMPLES)
        have = {(n, e.spec) for n, e, _ in found}
        return (crows_study.rows_of(self.con, [(n, e.fingerprint, r) for n, e, r in found]),
                [(n, e.spec) for n in named for e in resolved if (n, e.spec) not in have])

    def crows_results(self, run: str | None = None, test: str | None = None) -> pl.DataFrame:
        """Stored CrowS rows: one run's (an id or `latest`), else the latest run of each test x
        encoder (the view crows_latest)."""
        from .run import crows

        return crows.stored(self.con, run, test)


def debias_checks(specs: list[str], n: int = 500, seed: int = 0, resamples: int = 200,
                  protocol: str = "gonen-goldberg") -> dict[str, list]:
    """Gonen & Goldberg's recoverability checks and the similarity cost of each debiased encoder:
    {spec: run.debias.CheckRow rows, base and debiased side by side}. Every spec is built (its
    lists checked) before any check runs. Reads no store, writes nothing (`Store.debias_check`
    stores them). `protocol`: gonen-goldberg (the paper's, default) or projection (run.debias)."""
    return {spec: rows for spec, (_, rows) in _checked_encoders(specs, n, seed, resamples, protocol).items()}


def _checked_encoders(specs: list[str], n: int, seed: int, resamples: int,
                      protocol: str = "gonen-goldberg") -> dict[str, tuple]:
    """{spec: (its encoder, its CheckRow rows)}, every spec built before any check runs."""
    from . import encoders
    from .run.debias import PROTOCOLS, check_counts, checks

    if protocol not in PROTOCOLS:  # before any encoder is built
        raise UsageError(f"unknown check protocol {protocol!r} (known: {', '.join(PROTOCOLS)})")
    check_counts(n, resamples)
    built = {spec: encoders.resolve(spec) for spec in specs}
    return {spec: (enc, checks(enc, n, seed, resamples, protocol=protocol)) for spec, enc in built.items()}


def _recorded(study: Study | None, alpha: float) -> dict:
    """What a run records of the reading it was made under: the study in force (None: none),
    the alpha it judged at and the correction its results are read with."""
    return {"study": study.name if study is not None else None, "alpha": alpha,
            "correction": study.correction if study is not None else analysis.DEFAULT_CORRECTION}


def _framed(df: pl.DataFrame, family: analysis.Family) -> FamilyFrame:
    from .analysis.frame import FamilyFrame

    return FamilyFrame.of(df, family)


def _study(study) -> Study:
    from .study import study as studies

    return study if isinstance(study, studies.Study) else studies.load(study)


def _procedure(procedure: Procedure | None, encoders, option_values: dict, fallback) -> Procedure:
    """The procedure an analysis runs under: `procedure` (run.options.procedure, the CLI's
    resolution against the study), with a library caller's `encoders` and option keywords over
    it; without one, those alone over the library's defaults."""
    from dataclasses import replace

    from .run.options import procedure as resolve

    if procedure is None:
        return resolve(None, option_values, encoders, fallback)
    given = {k: v for k, v in option_values.items() if v is not None}
    return replace(procedure, values={**procedure.values, **given}, encoders=tuple(encoders or procedure.encoders),
                   typed=procedure.typed | set(given))


def _alpha(alpha: float | None, proc: Procedure, fallback) -> float:
    """The alpha given, else the procedure's (typed or the study's), else `fallback()`."""
    return alpha if alpha is not None else proc.alpha if proc.alpha is not None else fallback()


def _defaults(study: Study | None) -> tuple[str, float, str] | None:
    """What a reading takes from the study in force where the caller gives nothing: its name,
    alpha and correction (analysis.define_family)."""
    return (study.name, study.alpha, study.correction) if study is not None else None


def open(path: str | Path | None = None, read_only: bool = False, **inputs) -> Store:  # noqa: A001  (like duckdb.connect)
    """Open (read-write: create if missing) a stimkit store; `inputs`: catalog_dir,
    wordlist_dir, template_dir, override (your own study's test definitions, lists, templates:
    `store.folders`), limits (the bounds on rendering, stimuli.limits.Limits: `store.limits`)."""
    return Store(path, read_only, **inputs)


__all__ = ["Store", "StudyRun", "WeatResult", "open", "weat"]


def _score_or_encode(path, enc, stimuli, batch_size, progress, engine, workers) -> dict:
    """One encoder's encode: a scoring encoder (a language model) stores its texts' token
    log-probabilities (encoders.token_scores), any other its vectors."""
    from .encoders import embeddings

    if not getattr(enc, "scores", False):
        return embeddings.encode_missing_released(path, enc, stimuli, batch_size, progress, engine, workers)
    from .encoders import token_scores

    if engine != "local":
        raise StimkitError(f"encoder {enc.spec!r}: a scoring encoder runs on the local engine")
    texts = embeddings.items_for(enc, stimuli)["text"].to_list()  # an empty stimulus refused, naming its set
    return token_scores.score_missing(None, enc, texts, progress, path=path)
