-- CrowS-Pairs (Nangia et al. 2020) and likelihood tests over sentence pairs (issue 51).
-- `stimkit import crows-pairs FILE` stores every field of the CSV as provenance (crows_pairs),
-- the sentences as two stimulus sets (<test>/more and <test>/less, a pair's two sentences at
-- the same ordinal) and the test's name (crows_tests). `stimkit test crows-pairs -e <scoring
-- encoder>` stores one row per run x encoder x variant x split (crows_results) and the
-- per-pair scores of each variant (crows_pair_scores). Rows are only ever INSERTed, except a
-- re-import of a test's name, which points the name at the new import.

-- One row per imported test name: which import (a content hash of the file's pairs) it names.
CREATE TABLE IF NOT EXISTS crows_tests (
    name         VARCHAR PRIMARY KEY,     -- the test's name (default crows-pairs)
    version      VARCHAR NOT NULL,        -- sha256 of the pairs as read (16 hex): crows_pairs.version
    source       VARCHAR NOT NULL,        -- the file imported
    n_pairs      INTEGER NOT NULL,
    more_set     VARCHAR NOT NULL,        -- stimulus set of sent_more (<name>/more)
    less_set     VARCHAR NOT NULL,        -- stimulus set of sent_less (<name>/less)
    imported_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Every field of the CSV, unchanged (annotations and anon_annotators as the file writes them).
CREATE TABLE IF NOT EXISTS crows_pairs (
    version           VARCHAR NOT NULL,
    ordinal           INTEGER NOT NULL,   -- the pair's order in the file, from 0 (its stimuli's ordinal)
    line              INTEGER NOT NULL,   -- the file's line where the record begins
    pair_id           VARCHAR NOT NULL,   -- the CSV's first column (unnamed in the published file)
    sent_more         VARCHAR NOT NULL,   -- the more stereotyping sentence
    sent_less         VARCHAR NOT NULL,
    stereo_antistereo VARCHAR NOT NULL,   -- stereo | antistereo: whether sent_more demonstrates or violates a stereotype
    bias_type         VARCHAR NOT NULL,
    annotations       VARCHAR,
    anon_writer       VARCHAR,
    anon_annotators   VARCHAR,
    PRIMARY KEY (version, ordinal)
);

-- One row per run x test x encoder x variant x split of a likelihood pair test.
--   variant  sum | mean (causal); nangia | biasbench | aul | pll (masked)
--   split    all | stereo | antistereo | bias:<type>
--   score    % of the split's pairs whose sent_more scores higher (ties: neutral, not wins)
CREATE TABLE IF NOT EXISTS crows_results (
    run_id      VARCHAR NOT NULL,
    test        VARCHAR NOT NULL,
    version     VARCHAR NOT NULL,         -- the import scored (crows_tests.version then)
    encoder     VARCHAR NOT NULL,
    fingerprint VARCHAR NOT NULL,
    variant     VARCHAR NOT NULL,
    split       VARCHAR NOT NULL,
    tool        VARCHAR NOT NULL,         -- the published tool this variant reproduces
    n           INTEGER NOT NULL,         -- pairs scored in the split (a variant may skip some)
    wins        INTEGER NOT NULL,         -- sent_more higher
    neutral     INTEGER NOT NULL,         -- ties (at the variant's rounding)
    skipped     INTEGER NOT NULL,         -- pairs the variant cannot score (biasbench: a side with no differing token)
    score       DOUBLE,                   -- 100 * wins / n; 50: no preference
    ci_low      DOUBLE,                   -- percentile bootstrap over pairs (seeded by the run's seed)
    ci_high     DOUBLE,
    resamples   INTEGER NOT NULL,
    seed        BIGINT NOT NULL,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, test, fingerprint, variant, split)
);

-- Each pair's two scores under each variant (the report's figure of per-pair differences).
CREATE TABLE IF NOT EXISTS crows_pair_scores (
    run_id      VARCHAR NOT NULL,
    test        VARCHAR NOT NULL,
    fingerprint VARCHAR NOT NULL,
    variant     VARCHAR NOT NULL,
    ordinal     INTEGER NOT NULL,      -- the pair's (crows_pairs.ordinal of the test's import)
    more_score  DOUBLE,                   -- NULL: skipped by the variant
    less_score  DOUBLE,
    decision    INTEGER,                  -- 1 sent_more wins, 0 neutral, -1 sent_less wins; NULL skipped
    PRIMARY KEY (run_id, test, fingerprint, variant, ordinal)
);

-- The latest run's rows of each test x encoder, with the run's study and seed.
CREATE OR REPLACE VIEW crows_latest AS
SELECT c.* EXCLUDE (created_at), u.study, u.command
FROM crows_results c JOIN runs u USING (run_id)
QUALIFY c.run_id = max(c.run_id) OVER (PARTITION BY c.test, c.fingerprint);
