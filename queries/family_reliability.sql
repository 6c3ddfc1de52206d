-- The test-retest coefficients (db/034 reliability_results) computed from results in the temp
-- view `family`: the latest of each (scope, test, role, coefficient), for `check`'s notes.
SELECT * EXCLUDE (created_at) FROM reliability_results
WHERE measure = 'test-retest' AND list_has_any(result_ids, (SELECT list(result_id) FROM family))
QUALIFY row_number() OVER (PARTITION BY scope, test, role, coefficient ORDER BY created_at DESC, run_id DESC) = 1
ORDER BY scope, test NULLS FIRST, coefficient
