-- A test's row in its paper (Caliskan's C1..C10, C3b, Tan & Celis's +C11, ABW, DB-competent,
-- ...) is `paper_test`; `family` names one thing only: the multiple-testing family (the temp
-- view `family` that corrections and checks read, stimkit.analysis.families).
ALTER TABLE results RENAME COLUMN family TO paper_test;

-- The views that named the column, as in 007 and 013 with the new name (the views that
-- select r.* carry the new name by themselves).
CREATE OR REPLACE VIEW results_with_items AS
SELECT r.result_id, r.run_id, r.test, r.paper_test, r.encoder, r.fingerprint, r.context,
       r.effect_size, r.p_value, r.p_method, r.created_at,
       i.role, i.ordinal, i.set_version, i.stimulus, i.word, i.template_id, i.association, i.dropped
FROM results r JOIN result_items i USING (result_id);

CREATE OR REPLACE VIEW latest_results_with_items AS
SELECT r.result_id, r.run_id, r.test, r.paper_test, r.encoder, r.fingerprint, r.context,
       r.effect_size, r.p_value, r.p_method, r.created_at,
       i.role, i.ordinal, i.set_version, i.stimulus, i.word, i.template_id, i.association, i.dropped
FROM latest_results r JOIN result_items i USING (result_id);
