-- What a wording audit was computed from: the versions its original test read as X, Y, A and B
-- (as results.role_versions, db/024), so that `stimkit status` can say when its sets changed since.
ALTER TABLE wording_audits ADD COLUMN IF NOT EXISTS role_versions VARCHAR;
