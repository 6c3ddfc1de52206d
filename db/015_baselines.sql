-- What a d means on this encoder: matched random baselines, and what each result's target
-- sets are made of (stimulus diagnostics).

-- X's and Y's words per result: frequency (wordfreq's Zipf scale), subword length under the
-- encoder's tokenizer or a static vocabulary's OOV share, split-half reliability.
CREATE TABLE IF NOT EXISTS result_diagnostics (
    result_id   VARCHAR NOT NULL,
    role        VARCHAR NOT NULL,          -- X | Y
    n_words     INTEGER NOT NULL,
    zipf_mean   DOUBLE,
    zipf_sd     DOUBLE,
    pieces_mean DOUBLE,                    -- NULL: a static vocabulary, or no tokenizer
    oov_share   DOUBLE,                    -- NULL: not a static vocabulary
    reliability DOUBLE,                    -- Spearman-Brown split-half; NULL under four words
    language    VARCHAR,
    PRIMARY KEY (result_id, role)
);

-- A matched random baseline: K random pairs of target sets, each word matched to a target
-- word on frequency and subword count, through the same templates and the same procedure.
-- Computed once per (test, encoder fingerprint, set versions, K, seed, procedure): baseline_id.
CREATE TABLE IF NOT EXISTS baselines (
    baseline_id     VARCHAR PRIMARY KEY,
    run_id          VARCHAR NOT NULL,
    test            VARCHAR NOT NULL,
    encoder         VARCHAR NOT NULL,
    fingerprint     VARCHAR NOT NULL,
    context         VARCHAR NOT NULL,
    set_versions    VARCHAR[],
    k               INTEGER NOT NULL,
    seed            BIGINT NOT NULL,
    procedure       JSON NOT NULL,         -- the test's options that decide d and p, and the matching
    -- the columns a result is joined on (see result_baselines)
    alternative     VARCHAR NOT NULL,
    balance         VARCHAR,
    cut_seed        BIGINT,
    clustered       BOOLEAN NOT NULL,
    ddof            INTEGER NOT NULL,
    centering       VARCHAR,
    p_method        VARCHAR NOT NULL,
    samples         INTEGER,
    tolerance       DOUBLE NOT NULL,       -- Zipf distance allowed between a drawn word and its target
    vocabulary      VARCHAR NOT NULL,      -- 'wordfreq 3.1.1 en' or 'file NAME sha256:...'
    language        VARCHAR NOT NULL,
    n_candidates    INTEGER,
    min_pool        INTEGER,
    observed_d      DOUBLE,
    percentile      DOUBLE,                -- the observed d among the random d, 0-100
    fpr             DOUBLE,                -- share of random pairs with p <= alpha
    alpha           DOUBLE NOT NULL,
    d_median        DOUBLE,
    d_low           DOUBLE,                -- 2.5% and 97.5% quantiles of the random d
    d_high          DOUBLE,
    d_x             DOUBLE,                -- median d of X against its own matched random set
    d_y             DOUBLE,                -- ... and of Y against its own
    stimkit_version VARCHAR NOT NULL,
    seconds         DOUBLE,
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS baseline_draws (
    baseline_id VARCHAR NOT NULL,
    draw        INTEGER NOT NULL,          -- 0 .. k-1
    effect_size DOUBLE,                    -- d of the random pair
    p_value     DOUBLE,                    -- under the test's procedure
    d_x         DOUBLE,                    -- X against this draw's X words
    d_y         DOUBLE,                    -- Y against this draw's Y words
    x_words     VARCHAR[],                 -- the drawn words, in the order of the words they stand for
    y_words     VARCHAR[],
    PRIMARY KEY (baseline_id, draw)
);

-- Each result with the matched baseline of its hypothesis (same test, encoder fingerprint,
-- set versions and procedure; the largest K, then the latest), the observed d's percentile
-- among the random d (from the draws, ties half) and the share of random pairs rejected at
-- alpha (the `alpha` variable where a family set it, else the baseline's own).
CREATE OR REPLACE VIEW result_baselines AS
WITH matched AS (
    SELECT r.result_id, r.effect_size, b.baseline_id, b.alpha, b.k
    FROM results r JOIN baselines b
      ON b.test = r.test AND b.fingerprint = r.fingerprint AND b.context = r.context
     AND list_sort(b.set_versions) = list_sort(r.set_versions)
     AND b.alternative = r.alternative AND b.balance IS NOT DISTINCT FROM r.balance
     AND b.cut_seed IS NOT DISTINCT FROM r.cut_seed AND b.clustered = r.clustered AND b.ddof = r.ddof
     AND b.centering IS NOT DISTINCT FROM r.centering
     AND (b.p_method = 'parametric') = (r.p_method = 'parametric')
    WHERE coalesce(r.metric, 'weat') = 'weat'
    QUALIFY row_number() OVER (PARTITION BY r.result_id ORDER BY b.k DESC, b.created_at DESC, b.baseline_id) = 1
)
SELECT m.result_id, m.baseline_id, m.k AS baseline_k,
       100 * avg(CASE WHEN d.effect_size < m.effect_size THEN 1.0 WHEN d.effect_size = m.effect_size THEN 0.5 ELSE 0.0 END)
           AS baseline_percentile,
       avg(CASE WHEN d.p_value <= coalesce(getvariable('alpha'), m.alpha) THEN 1.0 ELSE 0.0 END) AS baseline_fpr
FROM matched m JOIN baseline_draws d USING (baseline_id)
WHERE d.effect_size IS NOT NULL
GROUP BY m.result_id, m.baseline_id, m.k;
