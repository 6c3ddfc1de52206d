-- Embeddings trained on a corpus (`stimkit train`, stimkit/catalog/training.py): a family of
-- replicates under one NAME, each an encoder `trained:NAME/seed-K` or `trained:NAME/boot-K`.
-- A family's inputs (corpus content, method, hyper-parameters) are fixed by its first train:
-- a name is never retrained on other inputs (a version once written is never changed).
CREATE TABLE IF NOT EXISTS trained_families (
    name          VARCHAR PRIMARY KEY,
    corpus_hash   VARCHAR NOT NULL,     -- sha256 of the documents' names and the files' bytes (not their location)
    method        VARCHAR NOT NULL,     -- word2vec | fasttext
    params        JSON NOT NULL,        -- the hyper-parameters (dim, window, min_count, epochs, sg, negative, ...)
    trainer       VARCHAR NOT NULL,     -- stimkit's trainer and gensim's version
    files         JSON NOT NULL,        -- [{document, sha256, path}]: where the text was read, its content
    reading       JSON NOT NULL,        -- {document, encoding}: how the files were read
    resample_seed BIGINT NOT NULL,      -- the seed of its bootstrap draws (boot-K: rng(resample_seed, K))
    n_documents   INTEGER NOT NULL,
    n_tokens      BIGINT NOT NULL,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS trained_models (
    fingerprint   VARCHAR PRIMARY KEY,  -- sha256 of corpus hash, method, params, trainer, seed and resample
    name          VARCHAR NOT NULL,
    replicate     VARCHAR NOT NULL,     -- seed-K or boot-K
    kind          VARCHAR NOT NULL,     -- seed | boot
    k             INTEGER NOT NULL,
    method        VARCHAR NOT NULL,
    params        JSON NOT NULL,
    corpus_hash   VARCHAR NOT NULL,
    seed          BIGINT NOT NULL,      -- gensim's seed
    resample      INTEGER,              -- boot-K: K (the draw is rng(resample_seed, K)); seed-K: NULL
    resample_seed BIGINT,
    n_documents   INTEGER NOT NULL,     -- documents trained on (a bootstrap's draws, repeats counted)
    n_tokens      BIGINT NOT NULL,
    vocab_size    INTEGER NOT NULL,
    dim           INTEGER NOT NULL,
    vectors_sha256 VARCHAR NOT NULL,    -- of the float32 matrix in vocabulary order: a replay is checked by it
    seconds       DOUBLE,
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (name, replicate)
);

-- A replicate's vectors, a word a row, in gensim's vocabulary order (most frequent first).
CREATE TABLE IF NOT EXISTS trained_vectors (
    fingerprint   VARCHAR NOT NULL,
    ordinal       INTEGER NOT NULL,
    word          VARCHAR NOT NULL,
    vector        FLOAT[] NOT NULL,
    PRIMARY KEY (fingerprint, ordinal)
);
