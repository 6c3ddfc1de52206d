-- Wording audits (stimkit.run.wording): a variant that gives an encoder the same input as the
-- original (the same token ids; where the encoder cannot say, the same vectors exactly) changes
-- nothing for it and counts in none of its shares. Audits stored before this have NULLs: every
-- variant counted in their shares.
ALTER TABLE wording_variants ADD COLUMN IF NOT EXISTS no_op BOOLEAN;         -- NULL: the original
ALTER TABLE wording_audits ADD COLUMN IF NOT EXISTS n_no_op INTEGER;         -- variants out of the shares
ALTER TABLE wording_audits ADD COLUMN IF NOT EXISTS no_op_variants VARCHAR[]; -- their names, in the family's order
