-- A likelihood test's scoring variant (run.likelihood: sum, mean, pll, aul or a study's own, from
-- the result's options) is part of the hypothesis it tests: the same test on the same language
-- model scored by sum and by mean are two measures, as two association metrics are, so one
-- never stands in for the other in a correction's family. concat_ws skips NULL: an embedding's
-- result (no variant) keeps the hypothesis it had.
CREATE OR REPLACE VIEW result_hypotheses AS
SELECT r.*,
       concat_ws(' | ', r.test, r.fingerprint, r.context, r.alternative, coalesce(r.balance, ''),
                 coalesce(r.units, CASE WHEN r.clustered OR r.context = 'word' THEN 'words' ELSE 'sentences' END),
                 CASE WHEN r.p_method = 'parametric' THEN 'parametric' ELSE 'permutation' END,
                 coalesce(r.role_versions, array_to_string(list_sort(r.set_versions), ',')),
                 coalesce(r.metric, 'weat'), coalesce(r.centering, 'raw'),
                 CASE WHEN r.context IN ('minimal-pairs', 'likelihood-weat')
                      THEN 'variant ' || coalesce(json_extract_string(r.options, '$.variant'), 'sum') END) AS hypothesis,
       r.result_id IN (SELECT result_id FROM stale_results) AS stale,
       r.result_id IN (SELECT result_id FROM result_retirements) AS retired
FROM results r;
