-- Your own study, honest families: tests stored by name with their context, the kind of a
-- result (only the tests a user ran are hypotheses of the default family), the encoder's
-- display name, retirement, and hypotheses that include the stimuli they used.

ALTER TABLE imported_tests ADD COLUMN IF NOT EXISTS context VARCHAR;      -- NULL: sentence (imported SEAT files)
ALTER TABLE imported_tests ADD COLUMN IF NOT EXISTS balance VARCHAR;
ALTER TABLE imported_tests ADD COLUMN IF NOT EXISTS alternative VARCHAR;

ALTER TABLE results ADD COLUMN IF NOT EXISTS kind VARCHAR DEFAULT 'test';  -- test | audit | compare
ALTER TABLE results ADD COLUMN IF NOT EXISTS display VARCHAR;              -- the encoder's display name, if given
-- Association metrics beside WEAT (stats.metrics): one result per metric; a metric without
-- a permutation null stores its value with p NULL and the reason.
ALTER TABLE results ADD COLUMN IF NOT EXISTS metric VARCHAR DEFAULT 'weat';
ALTER TABLE results ADD COLUMN IF NOT EXISTS p_null_reason VARCHAR;
-- The interval of d, always computed, and how (stats.intervals): attributes fixed, targets
-- (a word with its sentences) the sampled units.
ALTER TABLE results ADD COLUMN IF NOT EXISTS ci_method VARCHAR;
ALTER TABLE results ADD COLUMN IF NOT EXISTS ci_scheme VARCHAR;
-- Centring before cosines (--center mean|abtt:K --center-ref ...): part of the hypothesis.
ALTER TABLE results ADD COLUMN IF NOT EXISTS centering VARCHAR;

-- Results taken out of every family (kept, and reversible: `stimkit results unretire`).
CREATE TABLE IF NOT EXISTS result_retirements (
    result_id  VARCHAR PRIMARY KEY,
    reason     VARCHAR NOT NULL,
    retired_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- A result is stale when a set version it used is no longer the current version of its set
-- (the set was regenerated from changed word lists or templates since).
CREATE OR REPLACE VIEW stale_results AS
SELECT DISTINCT r.result_id
FROM results r, unnest(r.set_versions) AS u(version)
JOIN stimulus_sets s ON s.version = u.version
JOIN current_sets c ON c.name = s.name
WHERE c.version <> u.version;

-- Every result with the hypothesis it tests: the test on its stimuli (set versions), the
-- encoder, context, alternative, balance, clustering, p-value procedure (exact and sampled
-- permutation p-values estimate the same p, so they are one procedure), metric and centring.
CREATE OR REPLACE VIEW result_hypotheses AS
SELECT r.*,
       concat_ws(' | ', r.test, r.fingerprint, r.context, r.alternative, coalesce(r.balance, ''),
                 CASE WHEN r.clustered THEN 'clustered' ELSE 'items' END,
                 CASE WHEN r.p_method = 'parametric' THEN 'parametric' ELSE 'permutation' END,
                 array_to_string(list_sort(r.set_versions), ','), coalesce(r.metric, 'weat'),
                 coalesce(r.centering, 'raw')) AS hypothesis,
       r.result_id IN (SELECT result_id FROM stale_results) AS stale,
       r.result_id IN (SELECT result_id FROM result_retirements) AS retired
FROM results r;

-- The default correction family: the latest result of each hypothesis a user tested
-- (kind 'test'), on current stimuli, not retired, with a p-value (a metric without a
-- permutation null gives a value, not a test).
CREATE OR REPLACE VIEW latest_results AS
SELECT * FROM result_hypotheses
WHERE coalesce(kind, 'test') = 'test' AND NOT stale AND NOT retired AND p_value IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1;

-- Each stimulus' s(w, A, B) of the default family's results (results_with_items: every run).
CREATE OR REPLACE VIEW latest_results_with_items AS
SELECT r.result_id, r.run_id, r.test, r.family, r.encoder, r.fingerprint, r.context,
       r.effect_size, r.p_value, r.p_method, r.created_at,
       i.role, i.ordinal, i.set_version, i.stimulus, i.word, i.template_id, i.association, i.dropped
FROM latest_results r JOIN result_items i USING (result_id);
