-- Stimulus sets and stimuli. A set version is a content hash: once written it is never
-- updated or deleted (stimkit only ever INSERTs here).

CREATE TABLE IF NOT EXISTS stimulus_sets (
    version           VARCHAR PRIMARY KEY,   -- sha256 of word list + templates + generator version (16 hex)
    name              VARCHAR NOT NULL,      -- <wordlist>@<template set>[/<template file>], or import:<file>/<role>
    wordlist          VARCHAR NOT NULL,
    template_set      VARCHAR,
    template_file     VARCHAR,               -- NULL: chosen per word kind
    category          VARCHAR NOT NULL,
    source            VARCHAR NOT NULL,      -- the word-list or imported file
    generator_version VARCHAR NOT NULL,
    n_words           INTEGER NOT NULL,
    n_stimuli         INTEGER NOT NULL,
    created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS stimuli (
    set_version   VARCHAR NOT NULL,
    ordinal       INTEGER NOT NULL,          -- order within the set: word order, then template line
    wordlist      VARCHAR NOT NULL,
    word_ordinal  INTEGER NOT NULL,
    word          VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL,
    person        BOOLEAN,
    template_id   VARCHAR,                   -- <set>/<file>:<line>
    template_text VARCHAR,
    stimulus      VARCHAR NOT NULL,
    span_start    INTEGER,                   -- character span of the word inside the stimulus
    span_end      INTEGER,                   -- (end exclusive)
    PRIMARY KEY (set_version, ordinal)
);

-- Every generate run that produced or confirmed a version appends here; the newest
-- entry per name is the set's current version.
CREATE TABLE IF NOT EXISTS set_log (
    name         VARCHAR NOT NULL,
    version      VARCHAR NOT NULL,
    logged_at    TIMESTAMP NOT NULL DEFAULT current_timestamp,
    seq          BIGINT NOT NULL
);

CREATE OR REPLACE VIEW current_sets AS
SELECT s.*
FROM stimulus_sets s
JOIN (
    SELECT name, arg_max(version, seq) AS version FROM set_log GROUP BY name
) cur USING (name, version);

CREATE OR REPLACE VIEW current_stimuli AS
SELECT cs.name AS set_name, st.*
FROM stimuli st JOIN current_sets cs ON cs.version = st.set_version;

-- Test definitions loaded from published-format JSON (`stimkit import sentbias`).
CREATE TABLE IF NOT EXISTS imported_tests (
    name       VARCHAR PRIMARY KEY,
    source     VARCHAR NOT NULL,
    x_set      VARCHAR NOT NULL,
    y_set      VARCHAR NOT NULL,
    a_set      VARCHAR NOT NULL,
    b_set      VARCHAR NOT NULL,
    imported_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);
