-- What a CEAT result was computed from: the set versions that played X, Y, A and B (as
-- results.role_versions, db/024), so that `stimkit status` can say when its sets changed since.
ALTER TABLE ceat_results ADD COLUMN IF NOT EXISTS role_versions VARCHAR;
