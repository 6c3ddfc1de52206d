-- Views for plain SQL: a user of the duckdb CLI, polars or pandas needs no SET and no
-- knowledge of table names. (latest_results is in 005.)

-- Each stimulus' s(w, A, B) with the result it belongs to.
CREATE OR REPLACE VIEW results_with_items AS
SELECT r.result_id, r.run_id, r.test, r.family, r.encoder, r.fingerprint, r.context,
       r.effect_size, r.p_value, r.p_method, r.created_at,
       i.role, i.ordinal, i.set_version, i.stimulus, i.word, i.template_id, i.association, i.dropped
FROM results r JOIN result_items i USING (result_id);

-- Stimulus vectors over every stored dimension: rebuilt by stimkit whenever an
-- embeddings_<dim> table appears (stimkit.store.refresh_vector_view). Empty until then.
CREATE OR REPLACE VIEW stimulus_vectors AS
SELECT NULL::VARCHAR AS set_name, NULL::VARCHAR AS set_version, NULL::INTEGER AS ordinal, NULL::VARCHAR AS word,
       NULL::VARCHAR AS template_id, NULL::VARCHAR AS stimulus, NULL::VARCHAR AS encoder, NULL::VARCHAR AS fingerprint,
       NULL::INTEGER AS dim, NULL::FLOAT[] AS vector, NULL::VARCHAR AS note
WHERE false;
