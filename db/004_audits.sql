-- Template audits: how the choice of template moves a test's d and p.
-- audit_id is the result_id of the full test in `results`, so audits join to results.

CREATE TABLE IF NOT EXISTS audits (
    audit_id             VARCHAR PRIMARY KEY,
    run_id               VARCHAR NOT NULL,
    test                 VARCHAR NOT NULL,     -- the catalog test audited
    template_set         VARCHAR NOT NULL,
    encoder              VARCHAR NOT NULL,
    fingerprint          VARCHAR NOT NULL,
    alpha                DOUBLE NOT NULL,
    full_d               DOUBLE,
    full_p               DOUBLE,
    n_templates          INTEGER NOT NULL,     -- distinct target templates
    k_meta               INTEGER,              -- templates in the meta-analysis (both targets present)
    pooled_d             DOUBLE,               -- DerSimonian-Laird random-effects d
    pooled_se            DOUBLE,
    ci_low DOUBLE, ci_high DOUBLE,             -- confidence interval of pooled d
    pi_low DOUBLE, pi_high DOUBLE,             -- prediction interval for a new template
    tau2                 DOUBLE,               -- between-template variance
    i2                   DOUBLE,               -- share of variation between templates, 0..1
    q                    DOUBLE,
    decision_flip_share  DOUBLE,               -- templates alone whose decision at alpha differs from the full test
    sign_flip_share      DOUBLE,               -- templates alone whose sign of d differs
    created_at           TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS audit_templates (
    audit_id       VARCHAR NOT NULL,
    analysis       VARCHAR NOT NULL,           -- alone | left_out
    frame          VARCHAR NOT NULL,           -- the template with the word as X: "This is X." (see stimkit/audit.py)
    template_ids   VARCHAR[],
    n_x INTEGER, n_y INTEGER,
    effect_size    DOUBLE,
    variance       DOUBLE,                     -- Hedges-Olkin large-sample variance of d
    p_value        DOUBLE,
    p_method       VARCHAR,
    shift          DOUBLE,                     -- effect_size - the full test's d
    decision_flip  BOOLEAN,
    sign_flip      BOOLEAN,
    note           VARCHAR                     -- why a row has no numbers
);

CREATE TABLE IF NOT EXISTS audit_words (
    audit_id       VARCHAR NOT NULL,
    role           VARCHAR NOT NULL,           -- X | Y | A | B
    word           VARCHAR NOT NULL,
    n_stimuli      INTEGER NOT NULL,
    d_without      DOUBLE,                     -- d with every stimulus of the word left out
    influence      DOUBLE                      -- d_without - full d
);
