-- Scoring encoders (stimkit.encoders.scoring): a language model's log-probability of each token
-- of a text, one row a scored position. Keyed by content as vectors are (db/002): they join to
-- stimuli by text (t.text = s.stimulus), and the encoder is in `encoders` with dim 0 and
-- vector_table 'token_scores'.
--   position  the token's index among the text's own tokens (no special tokens), from 0
--   masked    true where that position was masked when it was scored (a masked LM's PLL row);
--             false for a causal LM's rows and for a masked LM's unmasked pass (AUL)
--   logprob   natural log (nats)
-- A text is written whole or not at all (its rows in one transaction).
CREATE TABLE IF NOT EXISTS token_scores (
    fingerprint VARCHAR NOT NULL,
    text        VARCHAR NOT NULL,
    position    INTEGER NOT NULL,
    token_id    BIGINT NOT NULL,
    token       VARCHAR NOT NULL,
    logprob     DOUBLE NOT NULL,
    masked      BOOLEAN NOT NULL,
    PRIMARY KEY (fingerprint, text, position, masked)
);

-- Which positions of each side of a sentence pair the two sides share (scoring.align: difflib
-- over token ids, as Nangia et al.'s metric.py aligns them): the pair variants (nangia, the
-- shared tokens; biasbench, those that differ) read it. pair_id is the caller's (a CrowS-Pairs
-- row, a minimal pair); side 0 and 1 name its two sentences.
CREATE TABLE IF NOT EXISTS pair_tokens (
    fingerprint VARCHAR NOT NULL,      -- the tokenizer's: the scoring encoder whose ids were aligned
    pair_id     VARCHAR NOT NULL,
    side        INTEGER NOT NULL,
    text        VARCHAR NOT NULL,
    position    INTEGER NOT NULL,
    shared      BOOLEAN NOT NULL,
    PRIMARY KEY (fingerprint, pair_id, side, position)
);
