-- A study's views show the study's own baseline: where the reading sets the variables
-- `baseline_k` (and `baseline_seed`), from the study's [baseline] table, the result's matched
-- baseline of that K (and seed) comes first; else, as before, the largest K, then the latest.
-- (One figure, one baseline: `run`, `results`, `baseline` and the report of a study agree.)

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
    QUALIFY row_number() OVER (PARTITION BY r.result_id ORDER BY
        coalesce(b.k = getvariable('baseline_k'), false) AND coalesce(b.seed = getvariable('baseline_seed'), true) DESC,
        b.k DESC, b.created_at DESC, b.baseline_id) = 1
)
SELECT m.result_id, m.baseline_id, m.k AS baseline_k,
       100 * avg(CASE WHEN d.effect_size < m.effect_size THEN 1.0 WHEN d.effect_size = m.effect_size THEN 0.5 ELSE 0.0 END)
           AS baseline_percentile,
       avg(CASE WHEN d.p_value <= coalesce(getvariable('alpha'), m.alpha) THEN 1.0 ELSE 0.0 END) AS baseline_fpr
FROM matched m JOIN baseline_draws d USING (baseline_id)
WHERE d.effect_size IS NOT NULL
GROUP BY m.result_id, m.baseline_id, m.k;
