-- Consistency checks over `family` (one row per test and encoder: the latest in it).
-- Each row is a violation: a place where results that should agree do not.
-- alpha: the significance level (default 0.01).
WITH r AS (
    SELECT * FROM family
    QUALIFY row_number() OVER (PARTITION BY test, fingerprint ORDER BY created_at DESC) = 1
),
alpha AS (SELECT coalesce(getvariable('alpha'), 0.01) AS a),

-- C7 (math/arts) and C8 (science/arts) measure nearly the same association (May et al. 2019, section 6).
c7_c8 AS (
    SELECT 'C7 vs C8' AS check_name, r1.encoder, r1.test || ' / ' || r2.test AS tests,
           printf('d %.2f / %.2f, p %.2g / %.2g', r1.effect_size, r2.effect_size, r1.p_value, r2.p_value) AS detail,
           concat_ws('; ',
               CASE WHEN (r1.p_value <= a) <> (r2.p_value <= a) THEN 'different decision at alpha' END,
               CASE WHEN abs(log10(r1.p_value) - log10(r2.p_value)) >= 2 THEN 'p-values 2+ orders of magnitude apart' END,
               CASE WHEN sign(r1.effect_size) <> sign(r2.effect_size) THEN 'opposite signs of d' END,
               CASE WHEN abs(r1.effect_size - r2.effect_size) >= 0.5 THEN 'd differs by 0.5 or more' END) AS violation
    FROM (VALUES ('weat7', 'weat8'), ('weat7b', 'weat8b'), ('sent-weat7', 'sent-weat8'), ('sent-weat7b', 'sent-weat8b')) pairs(t1, t2)
    JOIN r r1 ON r1.test = pairs.t1
    JOIN r r2 ON r2.test = pairs.t2 AND r2.fingerprint = r1.fingerprint, alpha
),

-- C3 > C4 > C5 use ever smaller sets: p is expected to rise (not fall) as they shrink.
c345 AS (
    SELECT 'C3/C4/C5' AS check_name, r3.encoder, r3.test || ' / ' || r4.test || ' / ' || r5.test AS tests,
           printf('p %.2g / %.2g / %.2g', r3.p_value, r4.p_value, r5.p_value) AS detail,
           concat_ws('; ',
               CASE WHEN r4.p_value < r3.p_value THEN 'p falls from C3 to C4' END,
               CASE WHEN r5.p_value < r4.p_value THEN 'p falls from C4 to C5' END) AS violation
    FROM (VALUES ('', ''), ('sent-', '')) prefix(p, unused)
    JOIN r r3 ON r3.test = prefix.p || 'weat3'
    JOIN r r4 ON r4.test = prefix.p || 'weat4' AND r4.fingerprint = r3.fingerprint
    JOIN r r5 ON r5.test = prefix.p || 'weat5' AND r5.fingerprint = r3.fingerprint
),

-- A word-level test and its bleached sentence version should agree in sign and decision.
word_sentence AS (
    SELECT 'word vs sentence' AS check_name, w.encoder, w.test || ' / ' || s.test AS tests,
           printf('d %.2f / %.2f, p %.2g / %.2g', w.effect_size, s.effect_size, w.p_value, s.p_value) AS detail,
           concat_ws('; ',
               CASE WHEN (w.p_value <= a) <> (s.p_value <= a) THEN 'different decision at alpha' END,
               CASE WHEN sign(w.effect_size) <> sign(s.effect_size) THEN 'opposite signs of d' END) AS violation
    FROM r w JOIN r s ON s.test = 'sent-' || w.test AND s.fingerprint = w.fingerprint, alpha
),

-- One test across encoders: do they agree on the direction of the association?
across AS (
    SELECT 'across encoders' AS check_name, string_agg(DISTINCT encoder, ', ' ORDER BY encoder) AS encoder, test AS tests,
           printf('%d positive d, %d negative d, %d significant of %d',
                  count(*) FILTER (effect_size > 0), count(*) FILTER (effect_size < 0),
                  count(*) FILTER (p_value <= a), count(*)) AS detail,
           concat_ws('; ',
               CASE WHEN count(*) FILTER (effect_size > 0 AND p_value <= a) > 0
                     AND count(*) FILTER (effect_size < 0) > 0 THEN 'significant d > 0 for some encoders, d < 0 for others' END,
               CASE WHEN count(*) FILTER (p_value <= a) NOT IN (0, count(*)) THEN 'significant for some encoders only' END) AS violation
    FROM r, alpha
    GROUP BY test, a
    HAVING count(*) > 1
)

SELECT * FROM (
    SELECT * FROM c7_c8 UNION ALL SELECT * FROM c345 UNION ALL SELECT * FROM word_sentence UNION ALL SELECT * FROM across
)
WHERE violation <> ''
ORDER BY check_name, tests, encoder;
