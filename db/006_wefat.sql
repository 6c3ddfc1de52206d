-- WEFAT (Caliskan et al. 2017): property tables, results and per-word rows.

-- A property table version is a content hash of its rows; rows are only ever inserted.
CREATE TABLE IF NOT EXISTS property_tables (
    version    VARCHAR PRIMARY KEY,
    name       VARCHAR NOT NULL,
    unit       VARCHAR,
    source     VARCHAR,
    path       VARCHAR,
    n_values   INTEGER NOT NULL,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS property_values (
    version VARCHAR NOT NULL,
    word    VARCHAR NOT NULL,
    value   DOUBLE NOT NULL,
    PRIMARY KEY (version, word)
);

CREATE TABLE IF NOT EXISTS wefat_results (
    result_id          VARCHAR PRIMARY KEY,   -- <run_id>/<name>/<context>/<encoder fingerprint>
    run_id             VARCHAR NOT NULL,
    name               VARCHAR NOT NULL,
    source             VARCHAR NOT NULL,      -- catalog | adhoc
    encoder            VARCHAR NOT NULL,
    model              VARCHAR NOT NULL,
    fingerprint        VARCHAR NOT NULL,
    context            VARCHAR NOT NULL,      -- word | sentence | token
    targets_sql VARCHAR, a_sql VARCHAR, b_sql VARCHAR,
    set_versions       VARCHAR[],
    property           VARCHAR NOT NULL,      -- table name, or the SQL that selected (word, value)
    property_version   VARCHAR,               -- NULL when the property came from SQL
    n                  INTEGER NOT NULL,      -- target words used
    n_a INTEGER, n_b INTEGER,                 -- attribute stimuli used
    dropped_words      VARCHAR[],             -- targets left out (oov, no property, least typical)
    r DOUBLE, p_value DOUBLE,                 -- Pearson r of property on s(w), two-sided t-test p
    rho DOUBLE, rho_p_value DOUBLE,           -- Spearman
    slope DOUBLE, slope_ci_low DOUBLE, slope_ci_high DOUBLE,
    intercept DOUBLE, intercept_ci_low DOUBLE, intercept_ci_high DOUBLE,
    r_ci_low DOUBLE, r_ci_high DOUBLE,        -- bootstrap percentile CI of r, when asked for
    ci_level           DOUBLE NOT NULL,
    bootstrap          INTEGER,
    drop_least_typical DOUBLE,
    word_p_method      VARCHAR,               -- how the per-word p-values were found
    budget             INTEGER,
    seed               BIGINT,
    options            JSON,
    stimkit_version    VARCHAR NOT NULL,
    seconds            DOUBLE,
    created_at         TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS wefat_items (
    result_id    VARCHAR NOT NULL,
    ordinal      INTEGER NOT NULL,            -- word order in the target set
    word         VARCHAR NOT NULL,
    set_version  VARCHAR,
    n_stimuli    INTEGER NOT NULL,            -- the word's stimuli with a vector (sentences in sentence context)
    template_ids VARCHAR[],
    association  DOUBLE,                      -- s(w, A, B); mean over the word's stimuli
    property     DOUBLE,
    word_p_value DOUBLE,
    dropped      VARCHAR                      -- NULL, 'oov: ...', 'no property' or 'least typical'
);
