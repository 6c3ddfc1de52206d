-- A test over a family of replicates (stimkit.run.replicates), and the reliability of a set of
-- results in Du et al.'s (2021) terms (stimkit.run.reliability). Rows are only ever INSERTed.
--
-- A family is any list of encoders that stand for one model trained again: `trained:NAME`
-- (the seeds and bootstrap samples of `stimkit train`), or a list a study's [replicates] table
-- or `--replicate NAME=SPEC` names (`replicates:NAME`: MultiBERTs' checkpoints, a vectors file
-- per seed). Each replicate's result is an ordinary result (results, with its items); the
-- family's summary of one test is a row here, under the family's encoder spec.
CREATE TABLE IF NOT EXISTS replicate_summaries (
    summary_id      VARCHAR PRIMARY KEY,   -- <run_id>/<test>/<family encoder>
    run_id          VARCHAR NOT NULL,
    test            VARCHAR NOT NULL,
    encoder         VARCHAR NOT NULL,      -- trained:NAME | replicates:NAME
    context         VARCHAR,
    role_versions   VARCHAR,               -- as results.role_versions (db/024): the sets by role
    input_key       VARCHAR,               -- hash of the members' input keys (run.association.result_key)
    alpha           DOUBLE NOT NULL,       -- the run's: a replicate "holds" when its p <= alpha
    alternative     VARCHAR,
    n_replicates    INTEGER NOT NULL,      -- with a d (a failed replicate is not counted)
    n_seed          INTEGER NOT NULL,
    n_boot          INTEGER NOT NULL,
    d_median        DOUBLE,
    d_low           DOUBLE,                -- 2.5% quantile of the replicates' d (numpy's linear rule)
    d_high          DOUBLE,                -- 97.5%
    share_holding   DOUBLE,                -- replicates whose own test rejects at alpha
    share_low       DOUBLE,                -- its Clopper-Pearson 95% interval
    share_high      DOUBLE,
    seed_d_median DOUBLE, seed_d_low DOUBLE, seed_d_high DOUBLE, seed_d_sd DOUBLE,   -- seed-K only
    boot_d_median DOUBLE, boot_d_low DOUBLE, boot_d_high DOUBLE, boot_d_sd DOUBLE,   -- boot-K only
    -- the crossed model extended by a replicate factor (stats.replicates.variance_split), on s(w)
    -- of the target stimuli: components (var_*) and their shares of the total (var_share_*)
    var_words DOUBLE, var_templates DOUBLE, var_group_template DOUBLE, var_replicates DOUBLE,
    var_group_replicate DOUBLE, var_residual DOUBLE,
    var_share_words DOUBLE, var_share_templates DOUBLE, var_share_group_template DOUBLE,
    var_share_replicates DOUBLE, var_share_group_replicate DOUBLE, var_share_residual DOUBLE,
    var_replicates_low DOUBLE, var_replicates_high DOUBLE,              -- 95% intervals (mls)
    var_group_replicate_low DOUBLE, var_group_replicate_high DOUBLE,    -- the component that moves d
    var_method      VARCHAR,               -- the split's scheme, or why it was not estimated
    n_shared_words  INTEGER,               -- words all replicates' vocabularies share (NULL: no vocabulary to compare)
    vocab_min       INTEGER,
    vocab_max       INTEGER,
    missing_words   VARCHAR[],             -- the test's words some replicate lacks: left out of every replicate's result
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS replicate_members (
    summary_id  VARCHAR NOT NULL,
    result_id   VARCHAR NOT NULL,
    replicate   VARCHAR NOT NULL,          -- the member's encoder spec
    kind        VARCHAR NOT NULL,          -- seed | boot
    k           INTEGER,
    PRIMARY KEY (summary_id, result_id)
);

-- `stimkit reliability`: one row per coefficient. Subjects and raters say what the matrix was:
-- test-retest: target words (subjects) x seed replicates (raters), s(w) from result_items;
-- inter-rater: results (a test on a replicate or encoder) x scoring rules, each rule's values
-- oriented (larger = more bias in the test's direction) and standardised; internal
-- consistency: replicates or encoders (subjects) x the words of one list (items), s(w).
CREATE TABLE IF NOT EXISTS reliability_results (
    reliability_id  VARCHAR PRIMARY KEY,   -- <run_id>/<measure>/<coefficient>/<scope>/<test>/<role>
    run_id          VARCHAR NOT NULL,
    measure         VARCHAR NOT NULL,      -- test-retest | inter-rater | internal
    coefficient     VARCHAR NOT NULL,      -- ICC(2,1) | ICC(2,k) | ICC(3,1) | alpha | split-half
    scope           VARCHAR NOT NULL,      -- the family's encoder, or 'selection'
    test            VARCHAR,               -- NULL: over tests
    role            VARCHAR,               -- X | Y | A | B for internal consistency
    subjects        VARCHAR NOT NULL,      -- words | results | replicates
    raters          VARCHAR NOT NULL,      -- seeds | metrics | words
    n_subjects      INTEGER NOT NULL,
    n_raters        INTEGER NOT NULL,
    value           DOUBLE,
    ci_low          DOUBLE,
    ci_high         DOUBLE,
    ci_level        DOUBLE,
    ci_method       VARCHAR,
    result_ids      VARCHAR[] NOT NULL,    -- the stored results it was computed from
    note            VARCHAR,
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp
);
