-- Stimuli in any language, with their provenance (stimkit.stimuli.language).
-- A set version's language (BCP 47, standard form) and where its words come from. Every set
-- written before this migration is English and original (the built-in lists, May et al.'s
-- files), which the defaults say; `provenance` keeps holding the --override records.
ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS language VARCHAR DEFAULT 'en';
ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS translation VARCHAR DEFAULT 'original';  -- original | human | machine | mixed
ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS translated_from VARCHAR;                -- a BCP 47 tag, where known
ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS licence VARCHAR;                        -- an SPDX id, where declared
ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS citation VARCHAR;                       -- the list's `source`: where the words come from

-- A word's grammatical gender (masculine | feminine | neuter | common), where its list marks
-- it: not its natural gender (the `gender` key, for pronouns).
ALTER TABLE stimuli ADD COLUMN IF NOT EXISTS grammatical_gender VARCHAR;

-- A stored test whose targets and attributes are in different languages on purpose (XWEAT).
ALTER TABLE imported_tests ADD COLUMN IF NOT EXISTS cross_lingual BOOLEAN DEFAULT false;

-- The language of the test a result ran: `de`, or targets+attributes for a cross-lingual test
-- (`en+de`); NULL where no set records one (sets selected by a SELECT of their own).
ALTER TABLE results ADD COLUMN IF NOT EXISTS language VARCHAR;

-- How many of a result's stimuli have the vector of another word's (stats.shared_vectors): an
-- encoder that cannot tell words apart (use-m3 on Bengali, Punjabi, Telugu) gives them one.
ALTER TABLE results ADD COLUMN IF NOT EXISTS n_shared_vectors INTEGER;
