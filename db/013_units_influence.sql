-- Findings that generalise: the unit of inference is part of the hypothesis, every sentence
-- result also carries the p with words as units, each result the influence of every word,
-- its word lists (to pair a word test with its sentence test), and a study's run its alpha.

-- sentences | words: what the permutation moved. A word test's unit is the word; a sentence
-- test permuted sentences unless it was clustered (whole words with their sentences).
ALTER TABLE results ADD COLUMN IF NOT EXISTS units VARCHAR;
UPDATE results SET units = CASE WHEN clustered OR context = 'word' THEN 'words' ELSE 'sentences' END
WHERE units IS NULL;

-- The p with whole words as units, whatever the result's own units (a word-unit result: its p).
ALTER TABLE results ADD COLUMN IF NOT EXISTS p_words DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS p_words_method VARCHAR;
ALTER TABLE results ADD COLUMN IF NOT EXISTS p_words_min DOUBLE;
UPDATE results SET p_words = p_value, p_words_method = p_method, p_words_min = min_p
WHERE p_words IS NULL AND units = 'words' AND p_value IS NOT NULL;

-- The word whose removal flips the decision at influence_alpha (the one moving d most if
-- several), else the word moving d most; fragile: some word flips the decision.
ALTER TABLE results ADD COLUMN IF NOT EXISTS influential_word VARCHAR;
ALTER TABLE results ADD COLUMN IF NOT EXISTS influential_role VARCHAR;   -- X | Y | A | B
ALTER TABLE results ADD COLUMN IF NOT EXISTS influential_d DOUBLE;       -- d without it
ALTER TABLE results ADD COLUMN IF NOT EXISTS influential_p DOUBLE;       -- p without it
ALTER TABLE results ADD COLUMN IF NOT EXISTS fragile BOOLEAN;
ALTER TABLE results ADD COLUMN IF NOT EXISTS influence_alpha DOUBLE;     -- the run's alpha the flags are at

-- The word list behind each of X, Y, A, B (NULL for a set given as SQL), and the test
-- definition's pairing key: `check` pairs a word test with a sentence test by these.
ALTER TABLE results ADD COLUMN IF NOT EXISTS word_lists VARCHAR[];
ALTER TABLE results ADD COLUMN IF NOT EXISTS pair_key VARCHAR;
UPDATE results SET word_lists = list_transform([x_sql, y_sql, a_sql, b_sql],
    lambda q: nullif(regexp_extract(q, '^SELECT \* FROM current_stimuli WHERE set_name = ''([^''@]+)@[^'']*'' ORDER BY ordinal$', 1), ''))
WHERE word_lists IS NULL;

-- d and p with each target and attribute word left out (the result's own procedure; p with
-- the influence budget, enough to decide at influence_alpha).
CREATE TABLE IF NOT EXISTS result_influence (
    result_id     VARCHAR NOT NULL,
    role          VARCHAR NOT NULL,          -- X | Y | A | B
    word          VARCHAR NOT NULL,
    n_stimuli     INTEGER NOT NULL,          -- the stimuli that left with it
    d_without     DOUBLE,                    -- NULL: undefined without it (its role would be empty)
    p_without     DOUBLE,
    p_method      VARCHAR,
    decision_flip BOOLEAN,                   -- (p_without <= influence_alpha) <> (p_value <= influence_alpha)
    PRIMARY KEY (result_id, role, word)
);

-- A study's run: its name, alpha and correction, the defaults of reading its results.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS study VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS alpha DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS correction VARCHAR;

-- Imported and ad-hoc tests keep their units (NULL: words).
ALTER TABLE imported_tests ADD COLUMN IF NOT EXISTS units VARCHAR;

-- The hypothesis names the units (sentences | words) where it named the clustering.
CREATE OR REPLACE VIEW result_hypotheses AS
SELECT r.*,
       concat_ws(' | ', r.test, r.fingerprint, r.context, r.alternative, coalesce(r.balance, ''),
                 coalesce(r.units, CASE WHEN r.clustered OR r.context = 'word' THEN 'words' ELSE 'sentences' END),
                 CASE WHEN r.p_method = 'parametric' THEN 'parametric' ELSE 'permutation' END,
                 array_to_string(list_sort(r.set_versions), ','), coalesce(r.metric, 'weat'),
                 coalesce(r.centering, 'raw')) AS hypothesis,
       r.result_id IN (SELECT result_id FROM stale_results) AS stale,
       r.result_id IN (SELECT result_id FROM result_retirements) AS retired
FROM results r;

CREATE OR REPLACE VIEW latest_results AS
SELECT * FROM result_hypotheses
WHERE coalesce(kind, 'test') = 'test' AND NOT stale AND NOT retired AND p_value IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1;

CREATE OR REPLACE VIEW latest_results_with_items AS
SELECT r.result_id, r.run_id, r.test, r.family, r.encoder, r.fingerprint, r.context,
       r.effect_size, r.p_value, r.p_method, r.created_at,
       i.role, i.ordinal, i.set_version, i.stimulus, i.word, i.template_id, i.association, i.dropped
FROM latest_results r JOIN result_items i USING (result_id);
