-- Inputs change, numbers follow: every derived object knows exactly what it was computed from.
--
-- A set's *input key* hashes the files it is rendered from (its word list's entries, the
-- template files of its set and the sets they inherit, the grammar, the generator); a key maps
-- to the version those inputs render (one row a key: rendering is pure). A command asks for
-- each set the version today's files give, and uses exactly that (stimkit.stimuli.current).
CREATE TABLE IF NOT EXISTS set_inputs (
    input_key  VARCHAR PRIMARY KEY,
    name       VARCHAR NOT NULL,
    version    VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Which set plays X, Y, A and B: 'X:v|Y:v|A:v|B:v' (a role's versions sorted, comma-joined).
-- Sorting the four together, as set_versions does, lost the roles: a test with A and B
-- swapped had the same hypothesis and found the old baselines.
ALTER TABLE results ADD COLUMN IF NOT EXISTS role_versions VARCHAR;
-- The hash of everything a result was computed from (test by role, set versions, encoder
-- fingerprint, resolved procedure, stimkit version): a study's run reuses a result with
-- today's key instead of computing it again (stimkit.run.association.result_key).
ALTER TABLE results ADD COLUMN IF NOT EXISTS input_key VARCHAR;
ALTER TABLE baselines ADD COLUMN IF NOT EXISTS role_versions VARCHAR;

-- Old results: their roles from their items; a metric's result from its WEAT sibling
-- (<run>/<test>/<fingerprint>/<metric> beside <run>/<test>/<fingerprint>). Old baselines keep
-- NULL and never match: they are computed again, by role.
UPDATE results SET role_versions = t.rv FROM (
    SELECT result_id, string_agg(role || ':' || vs, '|' ORDER BY instr('XYAB', role)) AS rv
    FROM (SELECT result_id, role, string_agg(DISTINCT set_version, ',' ORDER BY set_version) AS vs
          FROM result_items WHERE set_version IS NOT NULL GROUP BY result_id, role)
    GROUP BY result_id
) t WHERE results.result_id = t.result_id AND results.role_versions IS NULL;
UPDATE results SET role_versions = w.role_versions FROM results w
WHERE results.role_versions IS NULL AND results.metric IS NOT NULL AND results.metric <> 'weat'
  AND w.result_id = regexp_replace(results.result_id, '/[^/]+$', '');

-- Which results make a study's run, computed by it or reused from an earlier run because
-- their inputs are unchanged: the study's family is its latest run's members.
CREATE TABLE IF NOT EXISTS run_results (
    run_id    VARCHAR NOT NULL,
    result_id VARCHAR NOT NULL,
    PRIMARY KEY (run_id, result_id)
);

-- The hypotheses, the latest results and the matched baselines, by role.
CREATE OR REPLACE VIEW result_hypotheses AS
SELECT r.*,
       concat_ws(' | ', r.test, r.fingerprint, r.context, r.alternative, coalesce(r.balance, ''),
                 coalesce(r.units, CASE WHEN r.clustered OR r.context = 'word' THEN 'words' ELSE 'sentences' END),
                 CASE WHEN r.p_method = 'parametric' THEN 'parametric' ELSE 'permutation' END,
                 coalesce(r.role_versions, array_to_string(list_sort(r.set_versions), ',')),
                 coalesce(r.metric, 'weat'), coalesce(r.centering, 'raw')) AS hypothesis,
       r.result_id IN (SELECT result_id FROM stale_results) AS stale,
       r.result_id IN (SELECT result_id FROM result_retirements) AS retired
FROM results r;

CREATE OR REPLACE VIEW latest_results AS
SELECT * FROM result_hypotheses
WHERE coalesce(kind, 'test') = 'test' AND NOT stale AND NOT retired AND p_value IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY hypothesis ORDER BY created_at DESC, result_id DESC) = 1;

CREATE OR REPLACE VIEW latest_results_with_items AS
SELECT r.result_id, r.run_id, r.test, r.paper_test, r.encoder, r.fingerprint, r.context,
       r.effect_size, r.p_value, r.p_method, r.created_at,
       i.role, i.ordinal, i.set_version, i.stimulus, i.word, i.template_id, i.association, i.dropped
FROM latest_results r JOIN result_items i USING (result_id);

CREATE OR REPLACE VIEW result_baselines AS
WITH matched AS (
    SELECT r.result_id, r.effect_size, b.baseline_id, b.alpha, b.k
    FROM results r JOIN baselines b
      ON b.test = r.test AND b.fingerprint = r.fingerprint AND b.context = r.context
     AND b.role_versions = r.role_versions
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
