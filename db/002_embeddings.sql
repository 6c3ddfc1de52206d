-- Encoders and their vectors. Vectors live in one table per dimension,
-- embeddings_<dim> (created when the first encoder of that dimension is registered):
--   fingerprint, text, span_start, span_end (-1, -1 unless the encoder reads the span),
--   vector FLOAT[dim] (NULL when nothing could be encoded: see note), oov VARCHAR[], note.
-- They join to stimuli by content: e.text = s.stimulus (and the span, for token pooling).

CREATE TABLE IF NOT EXISTS encoders (
    fingerprint  VARCHAR PRIMARY KEY,   -- sha256 of name, options, weights identity, library versions
    spec         VARCHAR NOT NULL,      -- canonical spec, e.g. minilm,pooling=mean
    name         VARCHAR NOT NULL,
    dim          INTEGER NOT NULL,
    uses_span    BOOLEAN NOT NULL,
    vector_table VARCHAR NOT NULL,
    details      JSON NOT NULL,
    created_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
);
