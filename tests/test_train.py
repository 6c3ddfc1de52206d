"""Embeddings trained on a corpus (catalog.training, `stimkit train`, encoders.trained): a seed
gives bit-identical vectors in another process, seeds and bootstrap draws differ, fingerprints
follow the inputs and not their location, a trained replicate is an encoder that a test runs
on, Ray trains the local engine's vectors, and every refusal leaves the store unchanged."""

import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from stimkit import store
from stimkit.catalog import training
from stimkit.catalog.training import Hyper, Replicate
from stimkit.cli import app
from stimkit.encoders import resolve, trained
from stimkit.errors import InputError, StimkitError, UsageError

from conftest import FIXTURES, REPO, snapshot

CORPUS = FIXTURES / "corpus" / "inaugural"
SMALL = Hyper(dim=10, epochs=1, min_count=1)
# the CLI's hyper-parameters for the same models
SMALL_ARGS = ["--dim", "10", "--epochs", "1", "--min-count", "1"]


@pytest.fixture(scope="module")
def corp():
    return training.read_corpus([CORPUS])


@pytest.fixture(scope="module")
def trained_store(tmp_path_factory):
    """`stimkit train` end to end: 2 seeds and 2 bootstrap samples, two worker processes."""
    path = tmp_path_factory.mktemp("train") / "t.duckdb"
    r = CliRunner().invoke(app, ["--db", str(path), "train", str(CORPUS), "--name", "ina", "--seeds", "2",
                                 "--bootstrap", "2", "--workers", "2", *SMALL_ARGS, "-f", "csv"])
    assert r.exit_code == 0, r.output
    return path, r.output


def run(args):
    return CliRunner().invoke(app, args)


def sha(vectors) -> str:
    return hashlib.sha256(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).hexdigest()


def test_the_corpus_is_read_as_import_corpus_reads_it(corp):
    files = sorted(CORPUS.glob("*.txt"))
    assert corp.names == [f.name for f in files]            # a document a file, named relative to the folder
    # every token of the tokeniser that word vectors look words up with, lower-cased
    from stimkit.encoders.wordvectors import TOKEN
    by_hand = sum(len(TOKEN.findall(f.read_text(encoding="utf-8").lower())) for f in files)
    assert corp.n_tokens == by_hand and all(t == t.lower() for d in corp.documents for s in d for t in s)


def test_a_seed_gives_bit_identical_vectors_in_two_processes_under_other_hash_seeds(corp):
    script = ("import sys; from stimkit.catalog.training import *; c = read_corpus([sys.argv[1]]); "
              "h = Hyper(dim=10, epochs=1, min_count=1); "
              "print(train_one(c.documents, 'word2vec', h, Replicate('seed', 3, 3)).sha256, "
              "train_one(c.documents, 'fasttext', Hyper(dim=10, epochs=1, min_count=1, bucket=5000), "
              "Replicate('boot', 1, 0, 7)).sha256)")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(CORPUS)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO),
                                   "OMP_NUM_THREADS": "1"})
             for hash_seed in ("1", "2")]   # Python's str hash differs between these two processes
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outs.append(out.split())
    here = training.train_one(corp.documents, "word2vec", SMALL, Replicate("seed", 3, 3))
    assert outs[0] == outs[1] and outs[0][0] == here.sha256 == sha(here.vectors)
    other = training.train_one(corp.documents, "word2vec", SMALL, Replicate("seed", 4, 4))
    assert other.words == here.words and not np.array_equal(other.vectors, here.vectors)  # seeds differ


def test_a_bootstrap_draw_is_a_function_of_its_index_and_the_seed(corp):
    n = len(corp.documents)
    first = training.draw(n, 5, 0)
    assert np.array_equal(first, training.draw(n, 5, 0)) and len(first) == n and 0 <= first.min() <= first.max() < n
    assert not np.array_equal(first, training.draw(n, 6, 0)) and not np.array_equal(first, training.draw(n, 5, 1))
    assert len(set(first.tolist())) < n                      # with replacement: 20 draws of 20 repeat (p > 0.9999)
    done = training.train_one(corp.documents, "word2vec", SMALL, Replicate("boot", 5, 0, 0))
    tokens = [sum(len(s) for s in d) for d in corp.documents]
    assert done.n_documents == n and done.n_tokens == sum(tokens[i] for i in first)   # those documents, repeats counted


def test_fingerprints_follow_every_input_and_not_the_location(corp, tmp_path):
    rep = Replicate("seed", 0, 0)
    base = training.fingerprint(corp.hash, "word2vec", SMALL.params("word2vec"), rep)
    changed = {training.fingerprint(corp.hash, "word2vec", Hyper(**{**SMALL.__dict__, k: v}).params("word2vec"), rep)
               for k, v in (("dim", 11), ("window", 4), ("min_count", 3), ("epochs", 2), ("sg", 0))}
    changed |= {training.fingerprint(corp.hash, "fasttext", SMALL.params("fasttext"), rep),
                training.fingerprint(corp.hash, "word2vec", SMALL.params("word2vec"), Replicate("seed", 1, 1)),
                training.fingerprint(corp.hash, "word2vec", SMALL.params("word2vec"), Replicate("boot", 0, 0, 0)),
                training.fingerprint(corp.hash, "word2vec", SMALL.params("word2vec"), Replicate("boot", 0, 0, 1))}
    assert len(changed) == 9 and base not in changed
    moved = tmp_path / "elsewhere" / "inaugural"
    shutil.copytree(CORPUS, moved)
    assert training.read_corpus([moved]).hash == corp.hash        # the same bytes elsewhere: the same corpus
    one = moved / "1961-Kennedy.txt"
    data = bytearray(one.read_bytes())
    data[100] = ord("X") if data[100] != ord("X") else ord("Y")   # one byte
    one.write_bytes(bytes(data))
    assert training.read_corpus([moved]).hash != corp.hash


def test_train_end_to_end_then_a_weat_on_a_replicate(trained_store, corp):
    path, output = trained_store
    lines = output.strip().splitlines()
    assert lines[0].startswith("trained:ina: 4 replicate(s) trained by word2vec")
    assert [ln.split(",")[0] for ln in lines[2:]] == [f"trained:ina/{r}" for r in ("seed-0", "seed-1", "boot-0", "boot-1")]
    import stimkit
    with stimkit.open(path, read_only=True) as s:
        listed = s.trained("ina")
    assert listed["replicate"].to_list() == ["seed-0", "seed-1", "boot-0", "boot-1"]
    assert listed["vocab_size"].to_list()[:2] == [corp.vocabulary(1)] * 2   # every distinct token, at min-count 1
    con = store.connect(path, read_only=True)
    assert trained.family(con, "ina") == [f"trained:ina/{r}" for r in ("seed-0", "seed-1", "boot-0", "boot-1")]
    # the pool's vectors are this process's, bit for bit, and the store gives them back whole
    for kind, k, seed, resample in (("seed", 1, 1, None), ("boot", 1, 0, 0)):
        here = training.train_one(corp.documents, "word2vec", SMALL, Replicate(kind, k, seed, resample))
        fp = training.fingerprint(corp.hash, "word2vec", SMALL.params("word2vec"), Replicate(kind, k, seed, resample))
        words, vectors = trained.load(con, fp)
        assert words == here.words and sha(vectors) == here.sha256
        assert store.one(con, "SELECT vectors_sha256 FROM trained_models WHERE fingerprint = ?", [fp])[0] == here.sha256
    con.close()
    r = run(["--db", str(path), "test", "weat7", "-e", "trained:ina/seed-0", "-f", "csv"])
    assert r.exit_code == 0 and "1 result from 1 test x 1 encoder, 0 failures" in r.output, r.output
    con = store.connect(path, read_only=True)
    fp, d = store.one(con, "SELECT fingerprint, effect_size FROM results WHERE test = 'weat7'")
    assert np.isfinite(d) and fp == store.one(con, "SELECT fingerprint FROM trained_models WHERE replicate = 'seed-0'")[0]
    words, vectors = trained.load(con, fp)
    stored = store.rows(con, "SELECT text, vector FROM embeddings_10 WHERE fingerprint = ? AND vector IS NOT NULL", [fp])
    assert stored and all(np.array_equal(np.array(v, dtype=np.float32), vectors[words.index(t)]) for t, v in stored)
    con.close()


def test_a_retrain_adds_only_the_missing_replicates(trained_store):
    path, _ = trained_store
    r = run(["--db", str(path), "train", str(CORPUS), "--name", "ina", "--seeds", "3", "--bootstrap", "2",
             "--workers", "1", *SMALL_ARGS, "-f", "csv"])
    assert r.exit_code == 0, r.output
    status = dict(ln.split(",")[1:3] for ln in r.output.strip().splitlines()[2:])
    assert status == {"seed-0": "stored", "seed-1": "stored", "seed-2": "new", "boot-0": "stored", "boot-1": "stored"}


def test_resolving_a_replicate(trained_store):
    path, _ = trained_store
    con = store.connect(path, read_only=True)
    enc = resolve("trained:ina/seed-0", con)
    got = enc.encode(["Freedom", "nation, FREEDOM", "zzqx"], [None] * 3)
    words, vectors = trained.load(con, enc.fingerprint)
    f, n = vectors[words.index("freedom")], vectors[words.index("nation")]
    assert np.array_equal(got.vectors[0], f) and np.allclose(got.vectors[1], (f + n) / 2)   # lower-cased; CBoW
    assert np.isnan(got.vectors[2]).all() and "zzqx" in got.notes[2]
    for spec, error in (("trained:ina", "names a family"), ("trained:ina/seed-9", "not trained"),
                        ("trained:ina/run-1", "seed-K or boot-K"), ("trained:nope/seed-0", "not trained")):
        with pytest.raises(StimkitError):
            resolve(spec, con)
    with pytest.raises(StimkitError):
        resolve("trained:ina/seed-0")            # no store: refused in one line
    con.close()


def test_ray_trains_the_local_engines_vectors(corp):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        todo = [Replicate("seed", 2, 2), Replicate("boot", 3, 0, 0)]
        got = {d.replicate: d.sha256 for d in training.run(corp.documents, "word2vec", SMALL, todo, "ray", 2)}
    finally:
        ray.shutdown()
    assert got == {r: training.train_one(corp.documents, "word2vec", SMALL, r).sha256 for r in todo}


def test_refusals_leave_the_store_unchanged(trained_store, tmp_path, monkeypatch):
    path, _ = trained_store
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("The people of this nation. " * 200, encoding="utf-8")
    con = store.connect(path)
    before = snapshot(con)
    con.close()
    cases = [(["train", str(tiny), "--name", "tiny", "--seeds", "2"], 1, "too small to train on"),
             (["train", str(CORPUS), "--name", "one", "--seeds", "1"], 2, "a family of one replicate has no spread"),
             (["train", str(CORPUS), "--name", "x", "--method", "glove"], 2, "unknown --method"),
             (["train", str(CORPUS), "--name", "ina", "--seeds", "2", "--dim", "12", "--epochs", "1",
               "--min-count", "1"], 2, "trained on other inputs"),
             (["train", str(CORPUS), "--name", "ina-copy", "--seeds", "2", *SMALL_ARGS], 2,
              "these inputs are trained already as trained:ina"),
             (["train", "--corpus", "nope", "--name", "x"], 2, "no corpus 'nope' imported")]
    for args, code, message in cases:
        r = run(["--db", str(path), *args])
        assert r.exit_code == code and message in r.output and len(r.output.strip().splitlines()) == 1, (args, r.output)
    # a train that fails after its first replicate is stored keeps none of it
    real = training.write_replicate
    calls = []

    def failing(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise InputError("disk full")
        return real(*a, **kw)

    monkeypatch.setattr(training, "write_replicate", failing)
    import stimkit
    with stimkit.open(path) as s, pytest.raises(InputError):
        s.train([CORPUS], name="half", seeds=3, dim=9, epochs=1, min_count=1, workers=1)
    con = store.connect(path)
    assert len(calls) == 2 and snapshot(con) == before
    con.close()
    with pytest.raises(UsageError):
        training.replicates(0, 1)


def test_an_imported_corpus_is_trained_from_its_files_and_a_changed_file_is_refused(tmp_path):
    """`--corpus NAME` re-reads the files `import corpus` recorded: the same models as training on
    the files (the same fingerprints), and a file changed since is a refused retrain."""
    copy = tmp_path / "inaugural"
    shutil.copytree(CORPUS, copy)
    db = str(tmp_path / "c.duckdb")
    r = run(["--db", db, "import", "corpus", str(copy), "--name", "speeches", "-w", "male_terms", "-n", "2"])
    assert r.exit_code == 0, r.output
    r = run(["--db", db, "train", "--corpus", "speeches", "--name", "sp", "--seeds", "2", *SMALL_ARGS, "--workers", "1",
             "-f", "csv"])
    assert r.exit_code == 0, r.output
    fingerprints = [ln.split(",")[3] for ln in r.output.strip().splitlines()[2:]]
    corp = training.read_corpus([CORPUS])
    assert fingerprints == [training.fingerprint(corp.hash, "word2vec", SMALL.params("word2vec"), Replicate("seed", k, k))
                            for k in (0, 1)]
    (copy / "1941-Roosevelt.txt").write_text("Changed.\n", encoding="utf-8")
    r = run(["--db", db, "train", "--corpus", "speeches", "--name", "sp", "--seeds", "3", *SMALL_ARGS])
    assert r.exit_code == 2 and "trained on other inputs (corpus" in r.output, r.output
