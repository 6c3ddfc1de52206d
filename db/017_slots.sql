-- Templates with several slots (stimuli.slots): "I'm a Deaf grandmother." fills a descriptor
-- and a noun. A set of such a template set is named by the slot its list fills
-- (`descriptor=hb_age_young@holisticbias`); its stimuli's word and span are that slot's.

-- The slot a set is named by (NULL: a one-slot set).
ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS slot VARCHAR;

-- The template and the other slots' words ("holisticbias/default:3 | noun=grandmother"): what
-- a test balances between X and Y, and what the crossed model crosses with the words. NULL
-- in a one-slot set.
ALTER TABLE stimuli ADD COLUMN IF NOT EXISTS context_id VARCHAR;

-- Every slot's word and span in every stimulus of a multi-slot set (an absent optional slot
-- has no row). context_id: the template and the words of the stimulus' other slots.
-- (set_version, ordinal, slot) is unique by construction; no index is kept on it: a million
-- rows of HolisticBias are appended in seconds without one, and every reader joins by hash.
CREATE TABLE IF NOT EXISTS stimulus_slots (
    set_version VARCHAR NOT NULL,
    ordinal     INTEGER NOT NULL,
    slot        VARCHAR NOT NULL,
    wordlist    VARCHAR NOT NULL,
    word        VARCHAR NOT NULL,
    span_start  INTEGER,
    span_end    INTEGER,
    context_id  VARCHAR NOT NULL
);

-- The words that filled each slot of a multi-slot set, once each, with their word list's
-- tags (HolisticBias: axis, bucket, preference): where each word came from.
CREATE TABLE IF NOT EXISTS slot_words (
    set_version  VARCHAR NOT NULL,
    slot         VARCHAR NOT NULL,
    wordlist     VARCHAR NOT NULL,
    word_ordinal INTEGER NOT NULL,
    word         VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    gender       VARCHAR,
    tags         JSON,
    PRIMARY KEY (set_version, slot, wordlist, word_ordinal)
);

-- Current stimuli once per slot, each row's word, word list, span and context those of its
-- slot: select by any slot with SQL (X = descriptors from one list, all nouns and templates):
--   SELECT * FROM current_slot_stimuli
--   WHERE set_name = 'descriptor=*@holisticbias' AND slot = 'descriptor' AND wordlist = 'hb_age_young'
CREATE OR REPLACE VIEW current_slot_stimuli AS
SELECT st.* REPLACE (sl.wordlist AS wordlist, sl.word AS word, sl.span_start AS span_start,
                     sl.span_end AS span_end, sl.context_id AS context_id,
                     CASE WHEN sl.slot = ss.slot THEN st.kind END AS kind,
                     CASE WHEN sl.slot = ss.slot THEN st.person END AS person,
                     CASE WHEN sl.slot = ss.slot THEN st.word_ordinal END AS word_ordinal),
       sl.slot
FROM current_stimuli st
JOIN stimulus_sets ss ON ss.version = st.set_version
JOIN stimulus_slots sl ON sl.set_version = st.set_version AND sl.ordinal = st.ordinal;
