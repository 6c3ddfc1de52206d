-- The Monte Carlo error of a leave-one-word-out p: sqrt(p (1 - p) / draws) for a sampled p,
-- 0 for an exact one (stats.influence.Influence.p_se).
ALTER TABLE result_influence ADD COLUMN IF NOT EXISTS p_se DOUBLE;
