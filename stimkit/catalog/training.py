"""Embeddings trained on a corpus: `stimkit train FILES... --name NAME` (issue 52).

A family of gensim models (word2vec or FastText) trained on one corpus, each a replicate and an
encoder: `trained:NAME/seed-K` (the same documents, gensim's seed K, K = 0..S-1) and
`trained:NAME/boot-K` (the documents drawn with replacement, Antoniak & Mimno 2018: the draw is
a function of K and the resample seed alone; every bootstrap replicate is trained with gensim's
seed BOOT_SEED = 0, so boot-K differs from seed-0 only in its documents).

The corpus is read as `import corpus` reads it (catalog.corpus: the same files, cleaning and
documents: a file by default, a JSONL or Parquet record). Each record is cut into sentences
(corpus.sentences) and each sentence into tokens by the word-vector encoders' own tokeniser
(encoders.wordvectors.tokenize, lower-cased), so that a word is looked up at test time as it
was cut at training time.

Determinism: one gensim worker a model and gensim's seed. gensim 4 initialises its vectors with
numpy's default_rng(seed) (KeyedVectors.prep_vectors), not with Python's salted `hash`; the
`hashfxn` it still takes (used only by its deprecated seeded_vector) is given a stable hash
anyway. So a replicate's vectors are bit-identical on a rerun in another process (tested under
two PYTHONHASHSEEDs), and the store keeps their SHA-256 (`vectors_sha256`).

A replicate's fingerprint is the SHA-256 of: the corpus's content hash (the documents' names,
relative to the folder they share, and the files' bytes: not their location), the reading
options, the method, the hyper-parameters, the trainer (this module's version and gensim's),
the seed and the resample. A name is one family: its inputs are fixed by its first train, and a
train under the name with other inputs is refused (a version once written is never changed:
train under a new name). Training it again with more seeds or bootstrap samples adds the
replicates it lacks; those stored are kept as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError, UsageError
from ..seeding import derive_seed
from . import corpus as corpus_reader

METHODS = ("word2vec", "fasttext")
ENGINES = ("local", "ray")
TRAINER = "stimkit-train-1"
BOOT_SEED = 0            # gensim's seed for every bootstrap replicate
# The least a corpus must hold to be trained on (below it a model is noise, not a reading of
# the corpus): tokens, and distinct words that reach --min-count.
MIN_TOKENS = 10_000
MIN_VOCAB = 100
MIN_BOOT_DOCUMENTS = 5   # a bootstrap over fewer documents draws the same few texts again and again
MAX_REPLICATES = 1_000
PREFIX = "trained:"


@dataclass(frozen=True)
class Hyper:
    """The hyper-parameters. Defaults for a small corpus (tens of thousands to a few million
    tokens): skip-gram with negative sampling (Antoniak & Mimno's SGNS), 100 dimensions, a
    window of 5, words seen at least 5 times, 10 epochs (gensim's 5 is for large corpora)."""
    dim: int = 100
    window: int = 5
    min_count: int = 5
    epochs: int = 10
    sg: int = 1
    negative: int = 5
    sample: float = 1e-3
    min_n: int = 3           # FastText's character n-grams
    max_n: int = 6
    bucket: int = 200_000    # FastText's n-gram buckets (gensim's 2,000,000 are 800 MB a 100-dim model)

    def params(self, method: str) -> dict:
        out = asdict(self)
        if method != "fasttext":
            del out["min_n"], out["max_n"], out["bucket"]
        return out

    def check(self) -> Hyper:
        for option, value, low, high in (("--dim", self.dim, 2, 2000), ("--window", self.window, 1, 100),
                                         ("--min-count", self.min_count, 1, 1_000_000),
                                         ("--epochs", self.epochs, 1, 1000)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise UsageError(f"{option} must be a whole number from {low:,} to {high:,}, not {value!r}")
        return self


@dataclass(frozen=True)
class Replicate:
    kind: str                     # seed | boot
    k: int
    seed: int                     # gensim's
    resample_seed: int | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}-{self.k}"


@dataclass
class Corpus:
    """A corpus read for training: its documents (names, and each one's sentences as tokens)."""
    names: list[str]
    documents: list[list[list[str]]]
    files: list[dict]             # {document, sha256, path}
    reading: dict                 # {document, encoding}
    hash: str
    n_tokens: int

    def vocabulary(self, min_count: int) -> int:
        counts = Counter(t for d in self.documents for s in d for t in s)
        return sum(1 for n in counts.values() if n >= min_count)


@dataclass
class Trained:
    """One replicate's training: what the store keeps of it."""
    replicate: Replicate
    words: list[str]
    vectors: np.ndarray           # float32, a row a word, in gensim's vocabulary order
    n_documents: int
    n_tokens: int
    seconds: float

    @property
    def sha256(self) -> str:
        return vectors_hash(self.vectors)


@dataclass(frozen=True)
class TrainedRow:
    """A row of `stimkit train`'s report: one replicate."""
    encoder: str
    replicate: str
    status: str                   # new | stored
    fingerprint: str
    vocab_size: int
    n_tokens: int
    seconds: float | None


@dataclass
class TrainReport:
    name: str
    method: str
    params: dict
    corpus_hash: str
    n_documents: int
    n_tokens: int
    rows: list[TrainedRow] = field(default_factory=list)
    seconds: float = 0.0
    engine: str = "local"
    workers: int = 1


def vectors_hash(vectors: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).hexdigest()


def stable_hash(text: str) -> int:
    """gensim's `hashfxn`: the same in every process (Python's `hash` of a str is salted)."""
    return zlib.crc32(text.encode("utf-8"))


# ------------------------------------------------------------------ the corpus

def read_corpus(paths: list[str | Path], document: str | None = None, encoding: str = "utf-8",
                max_chars: int = corpus_reader.MAX_LINE_CHARS) -> Corpus:
    """The documents of the files (catalog.corpus's reading), each a list of tokenised sentences."""
    from ..encoders.wordvectors import tokenize
    from ..encoders.base import content_hash

    corpus_reader.check_document(document)
    encoding = corpus_reader.check_encoding(encoding)
    files = corpus_reader.corpus_files(paths)
    corpus_reader.check_reading(files, document, encoding)
    names = corpus_reader.documents(files)
    order: dict[str, list[list[str]]] = {}
    n_tokens = 0
    for path, name in names.items():
        for doc, _, text in corpus_reader.records(path, max_chars, name, by=document, encoding=encoding):
            sentences = order.setdefault(doc, [])
            for _, s in corpus_reader.sentences(text):
                toks = [t for t, _, _ in tokenize(s, True)]
                if toks:
                    sentences.append(toks)
                    n_tokens += len(toks)
    listed = [{"document": name, "sha256": content_hash(path), "path": str(path)} for path, name in names.items()]
    reading = {"document": document, "encoding": encoding}
    digest = hashlib.sha256(json.dumps({"reading": reading, "files": [[f["document"], f["sha256"]] for f in listed]},
                                       sort_keys=True).encode()).hexdigest()
    kept = [(n, d) for n, d in order.items() if d]
    return Corpus([n for n, _ in kept], [d for _, d in kept], listed, reading, digest, n_tokens)


def check_size(corp: Corpus, hyper: Hyper, bootstrap: int, where: str) -> None:
    """Refuse a corpus too small to train on (MIN_TOKENS, MIN_VOCAB), and a bootstrap over
    fewer than MIN_BOOT_DOCUMENTS documents."""
    vocab = corp.vocabulary(hyper.min_count)
    if corp.n_tokens < MIN_TOKENS or vocab < MIN_VOCAB:
        raise InputError(f"{where}: too small to train on: {corp.n_tokens:,} tokens and {vocab:,} words seen "
                         f"--min-count {hyper.min_count} times (at least {MIN_TOKENS:,} tokens and {MIN_VOCAB} such "
                         "words)")
    if bootstrap and len(corp.documents) < MIN_BOOT_DOCUMENTS:
        raise InputError(f"{where}: {len(corp.documents)} document(s): a bootstrap resamples documents and needs at "
                         f"least {MIN_BOOT_DOCUMENTS} (split the text into documents: --document record)")


# ------------------------------------------------------------------ replicates

def replicates(seeds: int, bootstrap: int, resample_seed: int = 0) -> list[Replicate]:
    """seed-0..seed-(S-1) (gensim's seed K) and boot-0..boot-(B-1) (gensim's seed BOOT_SEED).
    A family of one replicate has no spread: refused."""
    for option, value in (("--seeds", seeds), ("--bootstrap", bootstrap)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPLICATES:
            raise UsageError(f"{option} must be a whole number from 0 to {MAX_REPLICATES:,}, not {value!r}")
    if seeds + bootstrap == 0:
        raise UsageError("nothing to train: give --seeds S and/or --bootstrap B")
    if seeds + bootstrap == 1:
        raise UsageError("a family of one replicate has no spread: train at least two (--seeds 10, --bootstrap 20)")
    return ([Replicate("seed", k, k) for k in range(seeds)]
            + [Replicate("boot", k, BOOT_SEED, resample_seed) for k in range(bootstrap)])


def draw(n_documents: int, k: int, resample_seed: int) -> np.ndarray:
    """boot-K's documents: n indices drawn with replacement, a function of (resample_seed, K) alone."""
    rng = np.random.default_rng(derive_seed(resample_seed, "boot", k))
    return rng.integers(0, n_documents, size=n_documents)


def fingerprint(corpus_hash: str, method: str, params: dict, rep: Replicate) -> str:
    resample = None if rep.kind == "seed" else {"k": rep.k, "seed": rep.resample_seed}
    blob = json.dumps({"corpus": corpus_hash, "method": method, "params": params, "trainer": trainer(),
                       "seed": rep.seed, "resample": resample}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def trainer() -> str:
    from importlib.metadata import version

    return f"{TRAINER}, gensim {version('gensim')}"


def check_method(method: str) -> str:
    if method not in METHODS:
        from ..choices import suggest

        raise UsageError(f"unknown --method {method!r}{suggest(method, METHODS)} (known: {', '.join(METHODS)})")
    return method


def train_one(documents: list[list[list[str]]], method: str, hyper: Hyper, rep: Replicate) -> Trained:
    """One replicate, on one core: the same inputs give the same vectors, bit for bit."""
    from gensim.models import FastText, Word2Vec

    started = time.perf_counter()
    chosen = range(len(documents)) if rep.kind == "seed" else draw(len(documents), rep.k, rep.resample_seed)
    sentences = [s for i in chosen for s in documents[int(i)]]
    common = dict(vector_size=hyper.dim, window=hyper.window, min_count=hyper.min_count, epochs=hyper.epochs,
                  sg=hyper.sg, negative=hyper.negative, sample=hyper.sample, workers=1, seed=rep.seed,
                  hashfxn=stable_hash)
    if method == "fasttext":
        model = FastText(sentences=sentences, min_n=hyper.min_n, max_n=hyper.max_n, bucket=hyper.bucket, **common)
    else:
        model = Word2Vec(sentences=sentences, **common)
    return Trained(rep, list(model.wv.index_to_key), np.asarray(model.wv.vectors, dtype=np.float32),
                   len(chosen), sum(len(s) for s in sentences), time.perf_counter() - started)


# ------------------------------------------------------------------ engines

_WORKER: dict = {}


def _init_worker(documents, method, hyper) -> None:
    _WORKER.update(documents=documents, method=method, hyper=hyper)


def _train_in_worker(rep: Replicate) -> Trained:
    return train_one(_WORKER["documents"], _WORKER["method"], _WORKER["hyper"], rep)


def run(documents, method: str, hyper: Hyper, todo: list[Replicate], engine: str = "local",
        workers: int | None = None):
    """Each replicate's Trained as it finishes (in no set order), at most 2 x workers in flight, so
    that memory holds a few models whatever their number. local: this process (one worker) or a
    pool of processes; ray: tasks on a Ray cluster (encoders.ray_engine's: RAY_ADDRESS, else a
    local one), one CPU each. The same function trains in each: the same vectors."""
    if not todo:
        return
    if engine == "ray":
        yield from _ray(documents, method, hyper, todo, workers)
        return
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo)))
    if workers == 1:
        for rep in todo:
            yield train_one(documents, method, hyper, rep)
        return
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    # spawn: the parent holds DuckDB's threads, which a forked child must not inherit mid-lock
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker,
                             initargs=(documents, method, hyper)) as pool:
        pending, queue = set(), list(reversed(todo))
        while queue or pending:
            while queue and len(pending) < 2 * workers:
                pending.add(pool.submit(_train_in_worker, queue.pop()))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()


def _ray(documents, method: str, hyper: Hyper, todo: list[Replicate], workers: int | None):
    from ..encoders.ray_engine import connect

    ray = connect()
    workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    remote = ray.remote(num_cpus=1)(train_one)
    shared = ray.put(documents)     # one copy in the object store, read by every task
    pending, queue = [], list(reversed(todo))
    try:
        while queue or pending:
            while queue and len(pending) < 2 * workers:
                pending.append(remote.remote(shared, method, hyper, queue.pop()))
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        for ref in pending:
            ray.cancel(ref)


# ------------------------------------------------------------------ the store

def imported(con, name: str) -> tuple[list[str], str | None, str]:
    """The files, document and encoding that `import corpus --name NAME` recorded: training
    re-reads them (the store keeps the contexts it sampled, not the text), and the family
    records each file's SHA-256, so a retrain that reads changed files is refused."""
    from .. import store

    row = store.one(con, """SELECT s.provenance FROM stimulus_sets s JOIN current_sets c ON c.version = s.version
                            WHERE s.template_set = ? AND s.provenance IS NOT NULL
                            ORDER BY s.created_at DESC LIMIT 1""", [corpus_reader.PREFIX + name])
    if row is None:
        raise UsageError(f"no corpus {name!r} imported in this store (stimkit import corpus FILES --name {name} ...), "
                         "or give the files")
    recorded = json.loads(row[0]).get("corpus") or {}
    return list(recorded.get("files") or []), recorded.get("document"), recorded.get("encoding") or "utf-8"


def check_family(con, name: str, corp: Corpus, method: str, params: dict, resample_seed: int) -> bool:
    """Whether the family is stored already (with these inputs). Refused: the name trained on
    other inputs (a version once written is never changed), and these inputs trained under
    another name (the same models: a replicate is its content, one name each)."""
    from .. import store

    mine = {"corpus": corp.hash, "method": method, "params": params, "trainer": trainer(),
            "resample_seed": resample_seed}
    for other, *values in store.rows(con, "SELECT name, corpus_hash, method, params, trainer, resample_seed "
                                          "FROM trained_families"):
        theirs = dict(zip(mine, values))
        theirs["params"] = json.loads(theirs["params"])
        differ = [k for k in mine if mine[k] != theirs[k]]
        if other == name and differ:
            what = ", ".join(f"{k} {_short(theirs[k])} -> {_short(mine[k])}" for k in differ)
            raise UsageError(f"{PREFIX}{name} was trained on other inputs ({what}): a family once written is never "
                             f"changed; train under a new --name (e.g. {name}-2)")
        if other != name and not differ:
            raise UsageError(f"these inputs are trained already as {PREFIX}{other} (the same models): use that "
                             f"name, or change an input")
        if other == name:
            return True
    return False


def _short(value) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in sorted(value.items()))
    return str(value)[:12]


def stored_fingerprints(con, name: str) -> set[str]:
    from .. import store

    return {fp for (fp,) in store.rows(con, "SELECT fingerprint FROM trained_models WHERE name = ?", [name])}


def write_family(con, name: str, corp: Corpus, method: str, params: dict, resample_seed: int) -> None:
    from .. import store

    with store.transaction(con):
        store.insert(con, "trained_families", [{
            "name": name, "corpus_hash": corp.hash, "method": method, "params": json.dumps(params, sort_keys=True),
            "trainer": trainer(), "files": json.dumps(corp.files), "reading": json.dumps(corp.reading, sort_keys=True),
            "resample_seed": resample_seed, "n_documents": len(corp.documents), "n_tokens": corp.n_tokens}])


def write_replicate(con, name: str, corp: Corpus, method: str, params: dict, done: Trained) -> TrainedRow:
    """One replicate, its own transaction (a train's memory holds a few models, never the
    family); noted as the command's pending work, so a train that fails leaves none."""
    import pyarrow as pa

    from .. import store
    from ..encoders import embeddings
    from ..encoders.trained import TrainedEncoder

    rep = done.replicate
    fp = fingerprint(corp.hash, method, params, rep)
    n, dim = done.vectors.shape
    flat = pa.array(np.ascontiguousarray(done.vectors, dtype=np.float32).ravel())
    vectors = pa.ListArray.from_arrays(pa.array(np.arange(0, n * dim + 1, dim, dtype=np.int32)), flat)
    with store.transaction(con):
        store.insert(con, "trained_models", [{
            "fingerprint": fp, "name": name, "replicate": rep.label, "kind": rep.kind, "k": rep.k, "method": method,
            "params": json.dumps(params, sort_keys=True), "corpus_hash": corp.hash, "seed": rep.seed,
            "resample": rep.k if rep.kind == "boot" else None, "resample_seed": rep.resample_seed,
            "n_documents": done.n_documents, "n_tokens": done.n_tokens, "vocab_size": n, "dim": dim,
            "vectors_sha256": done.sha256, "seconds": done.seconds}])
        store.insert(con, "trained_vectors", pa.table({"fingerprint": [fp] * n, "ordinal": pa.array(range(n), pa.int32()),
                                                       "word": done.words, "vector": vectors}))
        embeddings.register(con, TrainedEncoder(name, rep.label, fp, done.words, done.vectors))
    return TrainedRow(f"{PREFIX}{name}/{rep.label}", rep.label, "new", fp, n, done.n_tokens, round(done.seconds, 3))


def train(con, paths: list[str | Path], *, name: str, corpus: str | None = None, method: str = "word2vec",
          seeds: int = 10, bootstrap: int = 0, hyper: Hyper = Hyper(), resample_seed: int = 0,
          engine: str = "local", workers: int | None = None, document: str | None = None,
          encoding: str = "utf-8", progress=None) -> TrainReport:
    """Train the family NAME's replicates that the store lacks (module doc); every check before
    the first model. `progress(done, total)` after each replicate."""
    from .. import store
    from ..stimuli.inputs import check_name

    started = time.perf_counter()
    check_name(name, "trained family", forbid="@/:,=\" ")
    check_method(method)
    hyper.check()
    if engine not in ENGINES:
        raise UsageError(f"unknown --engine {engine!r} (known: {', '.join(ENGINES)})")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsageError(f"--workers must be a whole number >= 1, not {workers!r}")
    wanted = replicates(seeds, bootstrap, resample_seed)
    if paths and corpus:
        raise UsageError("give the corpus's files or --corpus NAME (an imported corpus), not both")
    if corpus:
        paths, document, encoding = imported(con, corpus)
    if not paths:
        raise UsageError("give the corpus: FILES (files or folders, as `import corpus` reads them) or --corpus NAME")
    corp = read_corpus(paths, document, encoding)
    where = corpus or ", ".join(str(p) for p in list(paths)[:3]) + (", ..." if len(paths) > 3 else "")
    check_size(corp, hyper, bootstrap, where)
    params = hyper.params(method)
    known = check_family(con, name, corp, method, params, resample_seed)
    have = stored_fingerprints(con, name) if known else set()
    todo = [r for r in wanted if fingerprint(corp.hash, method, params, r) not in have]
    report = TrainReport(name, method, params, corp.hash, len(corp.documents), corp.n_tokens, engine=engine,
                         workers=workers or 1)
    if not known:
        write_family(con, name, corp, method, params, resample_seed)
    rows = {}
    for r in wanted:
        if r not in todo:
            fp = fingerprint(corp.hash, method, params, r)
            vocab, tokens = store.one(con, "SELECT vocab_size, n_tokens FROM trained_models WHERE fingerprint = ?", [fp])
            rows[r] = TrainedRow(f"{PREFIX}{name}/{r.label}", r.label, "stored", fp, vocab, tokens, None)
    for i, done in enumerate(run(corp.documents, method, hyper, todo, engine, workers), start=1):
        rows[done.replicate] = write_replicate(con, name, corp, method, params, done)
        if progress:
            progress(i, len(todo))
    report.rows = [rows[r] for r in wanted]
    report.seconds = time.perf_counter() - started
    return report
