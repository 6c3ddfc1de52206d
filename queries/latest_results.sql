-- The latest result for each test and encoder, over every run.
SELECT * FROM results
QUALIFY row_number() OVER (PARTITION BY test, fingerprint ORDER BY created_at DESC) = 1
ORDER BY test, encoder;
