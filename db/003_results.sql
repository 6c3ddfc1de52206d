-- Test runs and their results, down to each stimulus' association score.

CREATE TABLE IF NOT EXISTS runs (
    run_id          VARCHAR PRIMARY KEY,
    started_at      TIMESTAMP NOT NULL DEFAULT current_timestamp,
    command         VARCHAR,
    seed            BIGINT NOT NULL,
    stimkit_version VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS results (
    result_id        VARCHAR PRIMARY KEY,     -- <run_id>/<test>/<encoder fingerprint>
    run_id           VARCHAR NOT NULL,
    test             VARCHAR NOT NULL,
    test_source      VARCHAR NOT NULL,        -- catalog | import:... | adhoc
    family           VARCHAR,                 -- Caliskan row (C1..C10, C3b...), ABW, DB-competent, ...
    encoder          VARCHAR NOT NULL,        -- canonical spec, e.g. minilm,pooling=cls
    model            VARCHAR NOT NULL,        -- encoder name without options
    fingerprint      VARCHAR NOT NULL,
    context          VARCHAR NOT NULL,        -- word | sentence | token
    x_sql VARCHAR, y_sql VARCHAR, a_sql VARCHAR, b_sql VARCHAR,
    set_versions     VARCHAR[],               -- stimulus set versions that fed the test
    n_x INTEGER, n_y INTEGER, n_a INTEGER, n_b INTEGER,
    n_dropped_oov    INTEGER NOT NULL,        -- stimuli without a vector (out of vocabulary)
    balance          VARCHAR,                 -- cut | drop-words | none
    n_balanced_away  INTEGER NOT NULL,        -- target stimuli removed to equalise X and Y
    statistic        DOUBLE,                  -- s(X, Y, A, B)
    effect_size      DOUBLE,                  -- d
    ddof             INTEGER NOT NULL,
    p_value          DOUBLE,
    p_method         VARCHAR,                 -- exact | sampled | parametric | exact-clustered | sampled-clustered
    budget           INTEGER,
    samples          INTEGER,
    log10_partitions DOUBLE,
    alternative      VARCHAR,                 -- greater | less | two-sided
    seed             BIGINT,                  -- the run seed; the test's own seed derives from it and the test
    clustered        BOOLEAN NOT NULL,
    ci_low DOUBLE, ci_high DOUBLE, ci_level DOUBLE, bootstrap INTEGER,
    options          JSON,
    stimkit_version  VARCHAR NOT NULL,
    seconds          DOUBLE,
    created_at       TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS result_items (
    result_id    VARCHAR NOT NULL,
    role         VARCHAR NOT NULL,            -- X | Y | A | B
    ordinal      INTEGER NOT NULL,            -- position in the role's set as selected
    set_version  VARCHAR,
    stimulus     VARCHAR NOT NULL,
    word         VARCHAR,
    template_id  VARCHAR,
    association  DOUBLE,                      -- s(w, A, B) for targets that took part
    dropped      VARCHAR                      -- NULL, 'oov: ...' or 'balanced'
);
