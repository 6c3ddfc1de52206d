-- Minimal pairs of a likelihood test (run.likelihood, stimuli.minimal_pairs): one row a pair,
-- the same frame rendered with a word of X and a word of Y, each sentence's score under the
-- result's scoring variant (variant 'sum': log P of the whole sentence, in nats) and their
-- difference. The paired view of a result whose d, p and crossed d read the sentences'
-- scores in result_items (association = the score).
CREATE TABLE IF NOT EXISTS result_pairs (
    result_id   VARCHAR NOT NULL,
    pair        INTEGER NOT NULL,       -- 0, 1, ... in frame order, then word pair order
    frame       VARCHAR NOT NULL,       -- the template frame both sentences render ("This is X.")
    x_word      VARCHAR NOT NULL,
    y_word      VARCHAR NOT NULL,
    x_stimulus  VARCHAR NOT NULL,
    y_stimulus  VARCHAR NOT NULL,
    exact       BOOLEAN,                -- the two sentences agree outside the target's span (NULL: no span)
    variant     VARCHAR NOT NULL,       -- the scoring variant: sum
    x_score     DOUBLE NOT NULL,
    y_score     DOUBLE NOT NULL,
    difference  DOUBLE NOT NULL,        -- x_score - y_score
    PRIMARY KEY (result_id, pair)
);
