-- A writing command's work before its results are stored (stimkit/store/journal.py): its
-- token while it runs, and the key of every row of sets and vectors it added. The transaction
-- that stores its results removes both; the next writing open removes the rows of a command
-- whose process is gone, and its marks.
CREATE TABLE IF NOT EXISTS pending_work (
    token      VARCHAR PRIMARY KEY,
    pid        INTEGER NOT NULL,
    host       VARCHAR NOT NULL,
    command    VARCHAR,
    started_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS pending_rows (
    token VARCHAR NOT NULL,
    tbl   VARCHAR NOT NULL,    -- stimulus_sets, stimuli, stimulus_slots, slot_words, set_log, set_inputs, encoders, embeddings_<dim>
    key   VARCHAR[] NOT NULL   -- the row's key (a set's version or input key; a vector's fingerprint, text and span; a log's seq)
);
