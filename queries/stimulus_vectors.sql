-- Current stimuli with their vectors for one encoder; set it first:
--   SET VARIABLE encoder = 'minilm,pooling=mean';
-- (For a 384-d encoder; use embeddings_<dim> for another dimension.)
SELECT s.set_name, s.word, s.template_id, s.stimulus, e.vector, e.note
FROM current_stimuli s
JOIN encoders enc ON enc.spec = getvariable('encoder')
JOIN embeddings_384 e
  ON e.fingerprint = enc.fingerprint
 AND e.text = s.stimulus
 AND (e.span_start = -1 OR (e.span_start = s.span_start AND e.span_end = s.span_end));
