-- CrowS results carry a p (issue 51): the two-sided exact sign test of the split's wins against
-- its losses (sent_more higher vs sent_less higher; neutral and skipped pairs left out), H0 1/2.
-- It is the row's own p, never corrected with the study's family (docs/methods/crows-pairs.md:
-- a CrowS score is not a hypothesis of the family). NULL: no decided pair, or a row stored
-- before this migration.
ALTER TABLE crows_results ADD COLUMN IF NOT EXISTS sign_p DOUBLE;

-- the view again, so that its columns include sign_p (c.* is expanded when a view is made)
CREATE OR REPLACE VIEW crows_latest AS
SELECT c.* EXCLUDE (created_at), u.study, u.command
FROM crows_results c JOIN runs u USING (run_id)
QUALIFY c.run_id = max(c.run_id) OVER (PARTITION BY c.test, c.fingerprint);
