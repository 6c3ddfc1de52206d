-- The newer analyses keep their results (issue 48): CEAT's combined effect sizes (`audit ceat`)
-- and the checks of a debiased encoder (`debias check`), each row with its run (the `runs` row
-- carries the command, seed, study, alpha and correction). Rows are only ever INSERTed.

-- One row per test x encoder of `audit ceat` (stimkit.run.ceat).
CREATE TABLE IF NOT EXISTS ceat_results (
    ceat_id        VARCHAR PRIMARY KEY,   -- <run_id>/<test>/<encoder fingerprint>
    run_id         VARCHAR NOT NULL,
    test           VARCHAR NOT NULL,
    encoder        VARCHAR NOT NULL,
    fingerprint    VARCHAR NOT NULL,
    context        VARCHAR NOT NULL,      -- c-word | sentence
    n_samples      INTEGER NOT NULL,      -- CEAT's N: draws of one context a word
    seed           BIGINT NOT NULL,       -- of the draws
    words_x INTEGER, words_y INTEGER, words_a INTEGER, words_b INTEGER,  -- words with a context
    contexts_min   INTEGER NOT NULL,      -- contexts a word, fewest and most
    contexts_max   INTEGER NOT NULL,
    single_context_words INTEGER NOT NULL,  -- words with one context: the same in every draw
    ces            DOUBLE,                -- the combined effect size (random effects, DerSimonian-Laird)
    ces_variance   DOUBLE,
    ces_p          DOUBLE,                -- one-sided, as CEAT's code: N correlated draws pooled as N studies
    tau2           DOUBLE,
    q              DOUBLE,
    d              DOUBLE,                -- stimkit's d over every context (the test's own procedure)
    p_value        DOUBLE,
    crossed_d      DOUBLE,                -- words x contexts as random factors
    note           VARCHAR,               -- what the figure's label must say (e.g. words with one context)
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- One row per check of a debiased encoder (`debias check`, stimkit.run.debias): the figure on the
-- base encoder and on the debiased one, each with its interval, and the chance level.
CREATE TABLE IF NOT EXISTS debias_checks (
    run_id         VARCHAR NOT NULL,
    encoder        VARCHAR NOT NULL,      -- the debiased encoder's spec
    fingerprint    VARCHAR NOT NULL,
    base           VARCHAR NOT NULL,      -- its base encoder's spec
    "check"        VARCHAR NOT NULL,      -- clustering | classifier (rbf) | classifier (linear) | neighbours | wordsim353 | ...
    items          VARCHAR NOT NULL,      -- what was checked, in words
    before         DOUBLE, before_low DOUBLE, before_high DOUBLE,
    after          DOUBLE, after_low DOUBLE, after_high DOUBLE,
    chance         DOUBLE,
    n              INTEGER,
    "interval"     VARCHAR,               -- how the intervals were made
    protocol       VARCHAR,               -- gonen-goldberg | projection (how words were chosen and scored); '' for cost rows
    n_words        INTEGER NOT NULL,      -- --n: most biased words of each side
    resamples      INTEGER NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, fingerprint, "check")
);
