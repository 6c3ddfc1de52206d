-- Words and templates as random factors (stimkit/stats/crossed.py): a sentence test's d with
-- an interval that generalises to new words and new templates, and what its variance is made of.

-- Every sentence (and c-word) WEAT result whose targets span two template frames or more.
ALTER TABLE results ADD COLUMN IF NOT EXISTS crossed_d DOUBLE;          -- estimate of the population d (Caliskan's scale)
ALTER TABLE results ADD COLUMN IF NOT EXISTS crossed_ci_low DOUBLE;     -- interval at ci_level over words x templates
ALTER TABLE results ADD COLUMN IF NOT EXISTS crossed_ci_high DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS crossed_p DOUBLE;          -- p of the group contrast under the model
ALTER TABLE results ADD COLUMN IF NOT EXISTS crossed_method VARCHAR;    -- anova-gpq
ALTER TABLE results ADD COLUMN IF NOT EXISTS crossed_df DOUBLE;         -- Satterthwaite df of the contrast's variance
ALTER TABLE results ADD COLUMN IF NOT EXISTS crossed_scheme VARCHAR;    -- the design in words, or 'not estimated: why'
ALTER TABLE results ADD COLUMN IF NOT EXISTS n_templates INTEGER;       -- template frames of the target sentences
-- shares of the variance of s within a group (the SD^2 d divides by), summing to 1
ALTER TABLE results ADD COLUMN IF NOT EXISTS var_share_words DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS var_share_templates DOUBLE;
ALTER TABLE results ADD COLUMN IF NOT EXISTS var_share_group_template DOUBLE;  -- what moves d between templates
ALTER TABLE results ADD COLUMN IF NOT EXISTS var_share_residual DOUBLE;        -- word x template and sentence noise

-- The template audit's pooled estimate now comes from that model on the full test, not from a
-- DerSimonian-Laird meta-analysis of the per-template tests (they share the words: they are
-- not independent studies). Audits stored before this migration keep their old values, with
-- pooled_method NULL. Columns whose meaning changed for pooled_method = 'anova-gpq':
--   k_meta      templates in the model (was: in the meta-analysis)
--   pooled_d    the crossed d (= results.crossed_d of the audit's full test)
--   pooled_se   SE of the X - Y difference of mean s over the estimated SD (d units, SD fixed)
--   ci_low/high the crossed interval of d (words and templates sampled)
--   pi_low/high where d would lie in one new template (its own group x template effect added)
--   tau2        2 var_group_template / SD^2: the between-template variance of a template's d
--   i2          the share of the per-template contrasts' spread (same words) due to templates:
--               2 var_gt / (2 var_gt + var_residual (1/n_words_x + 1/n_words_y))
--   q           NULL (Cochran's Q belonged to the meta-analysis)
ALTER TABLE audits ADD COLUMN IF NOT EXISTS pooled_method VARCHAR;      -- anova-gpq; NULL: DerSimonian-Laird (before 014)
ALTER TABLE audits ADD COLUMN IF NOT EXISTS pooled_p DOUBLE;            -- the crossed p (alternative of the test)
ALTER TABLE audits ADD COLUMN IF NOT EXISTS pooled_df DOUBLE;
ALTER TABLE audits ADD COLUMN IF NOT EXISTS var_share_words DOUBLE;
ALTER TABLE audits ADD COLUMN IF NOT EXISTS var_share_templates DOUBLE;
ALTER TABLE audits ADD COLUMN IF NOT EXISTS var_share_group_template DOUBLE;
ALTER TABLE audits ADD COLUMN IF NOT EXISTS var_share_residual DOUBLE;
