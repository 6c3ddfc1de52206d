-- What a CEAT result was computed from: the set versions that played X, Y, A and B (as
-- results.role_versions, db/024), so that `stimkit status` can say when its sets changed since.
ALTER TABLE ceat_results ADD COLUMN IF NOT EXISTS role_versions VARCHAR;
-- The same for a wording audit: the versions its original test read as X, Y, A and B.
ALTER TABLE wording_audits ADD COLUMN IF NOT EXISTS role_versions VARCHAR;
