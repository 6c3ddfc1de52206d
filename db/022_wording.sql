-- Wording audits (stimkit.run.wording): does a test's finding survive meaning-preserving
-- rewordings of its templates (stimuli.perturb)? Rows are only ever INSERTed.

-- Every rewritten line of a template-set variant: its rule and its parent template. A variant's
-- digest covers what it renders, so the same variant name with other content is another row.
CREATE TABLE IF NOT EXISTS template_variants (
    variant             VARCHAR NOT NULL,    -- <set>~<rule>: a template set
    variant_digest      VARCHAR NOT NULL,    -- digest of its rewritten files and helpers (16 hex)
    parent_set          VARCHAR NOT NULL,
    rule                VARCHAR NOT NULL,
    family              VARCHAR NOT NULL,    -- determiners | tense | ... | user | paraphrase
    rule_source         VARCHAR NOT NULL,    -- built-in | the _set.toml that declares it
    template_id         VARCHAR NOT NULL,    -- <variant>/<file>:<line>
    parent_template_id  VARCHAR NOT NULL,    -- <set>/<file>:<line>
    parent_text         VARCHAR NOT NULL,
    text                VARCHAR NOT NULL,
    PRIMARY KEY (variant_digest, template_id)
);

-- One row per test x encoder of a wording audit.
CREATE TABLE IF NOT EXISTS wording_audits (
    audit_id             VARCHAR PRIMARY KEY,  -- <run_id>/<test>/<encoder fingerprint>
    run_id               VARCHAR NOT NULL,
    test                 VARCHAR NOT NULL,
    template_set         VARCHAR NOT NULL,     -- the set perturbed
    encoder              VARCHAR NOT NULL,
    fingerprint          VARCHAR NOT NULL,
    alpha                DOUBLE NOT NULL,      -- decisions: p <= alpha
    n_variants           INTEGER NOT NULL,
    n_dropped            INTEGER NOT NULL,     -- rewritten lines dropped for grammar
    original_d           DOUBLE,
    original_p           DOUBLE,
    rel_change_min       DOUBLE,               -- (d_variant - d_original) / |d_original| (Seshadri et al. 2022)
    rel_change_max       DOUBLE,
    sign_flip_share      DOUBLE,
    decision_flip_share  DOUBLE,
    template_share       DOUBLE,               -- templates' share of variance, crossed words x templates over the family
    family_d             DOUBLE,               -- the crossed model's d over the family
    verdict              VARCHAR NOT NULL,     -- robust | fragile
    created_at           TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS wording_variants (
    audit_id        VARCHAR NOT NULL,
    variant         VARCHAR NOT NULL,          -- the template set (the original: the set itself)
    rule            VARCHAR,                   -- NULL: the original
    family          VARCHAR,
    n_changed       INTEGER NOT NULL,          -- lines rewritten
    n_x INTEGER, n_y INTEGER,
    effect_size     DOUBLE,
    p_value         DOUBLE,
    rel_change      DOUBLE,
    sign_flip       BOOLEAN,
    decision_flip   BOOLEAN
);

-- Across encoders, per test: does their order by d survive the rewordings?
CREATE TABLE IF NOT EXISTS wording_rankings (
    run_id       VARCHAR NOT NULL,
    test         VARCHAR NOT NULL,
    encoders     VARCHAR[] NOT NULL,           -- in the original's order by d, largest first
    n_variants   INTEGER NOT NULL,
    mean_tau     DOUBLE,                       -- mean over variants of Kendall's tau against the original's order
    keep_share   DOUBLE                        -- share of variants whose order is the original's
);

-- Contexts from a corpus (catalog.corpus, `stimkit import corpus`): where each stimulus of a
-- corpus set comes from, and how many contexts each word had.
CREATE TABLE IF NOT EXISTS corpus_contexts (
    set_version  VARCHAR NOT NULL,
    ordinal      INTEGER NOT NULL,             -- the stimulus (stimuli.ordinal)
    document     VARCHAR NOT NULL,             -- the file (JSONL/Parquet: file#id or file#record)
    line         BIGINT NOT NULL,              -- the record's line (Parquet: its row), from 1
    char_offset  BIGINT NOT NULL,              -- the sentence's first character in the record
    PRIMARY KEY (set_version, ordinal)
);

CREATE TABLE IF NOT EXISTS corpus_words (
    set_version  VARCHAR NOT NULL,
    word         VARCHAR NOT NULL,
    found        BIGINT NOT NULL,              -- occurrences in the corpus
    sampled      INTEGER NOT NULL,             -- contexts kept (at most --per-word)
    PRIMARY KEY (set_version, word)
);
