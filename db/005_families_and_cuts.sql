-- Which results count: hypotheses, cuts and power.
--
-- A hypothesis is a test on an encoder under the options that change what is tested or
-- how: context, alternative, balance, clustering and the p-value procedure. Computing
-- it again (another run, another seed, another sample budget) is a replicate: the
-- latest one stands for the hypothesis and the others never add to a correction's m.

ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_seed BIGINT;        -- the seed of balance=cut (never --seed)
ALTER TABLE results ADD COLUMN IF NOT EXISTS min_p DOUBLE;           -- smallest p this test can produce
ALTER TABLE results ADD COLUMN IF NOT EXISTS statistic_kind VARCHAR; -- 'sum difference' | 'mean difference'
-- --cuts K: the spread of d and p over K independent cuts, beside the single-cut result
ALTER TABLE results ADD COLUMN IF NOT EXISTS cuts INTEGER;
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_d_min DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_d_median DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_d_max DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_p_min DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_p_median DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_p_max DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_reject_share DOUBLE; -- share of cuts with p <= cut_alpha
ALTER TABLE results ADD COLUMN IF NOT EXISTS cut_alpha DOUBLE;

CREATE TABLE IF NOT EXISTS result_cuts (
    result_id   VARCHAR NOT NULL,
    cut         INTEGER NOT NULL,           -- 0 .. cuts-1
    cut_seed    BIGINT NOT NULL,
    effect_size DOUBLE,
    p_value     DOUBLE,
    p_method    VARCHAR,
    rejected    BOOLEAN,                    -- p_value <= results.cut_alpha (uncorrected)
    PRIMARY KEY (result_id, cut)
);

-- Every result with the hypothesis it tests. Exact and sampled permutation p-values
-- estimate the same p, so they are one procedure; the parametric fit is another.
CREATE OR REPLACE VIEW result_hypotheses AS
SELECT *, concat_ws(' | ', test, fingerprint, context, alternative, coalesce(balance, ''),
                    CASE WHEN clustered THEN 'clustered' ELSE 'items' END,
                    CASE WHEN p_method = 'parametric' THEN 'parametric' ELSE 'permutation' END) AS hypothesis
FROM results;

-- The latest result of each hypothesis, over every run: the default correction family.
CREATE OR REPLACE VIEW latest_results AS
SELECT * FROM result_hypotheses
QUALIFY row_number() OVER (PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1;
