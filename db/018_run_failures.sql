-- What a run could not compute: each test or encoder that failed, and why. A report of the run
-- (`stimkit report --study`) names them beside the results it shows, with the stale and retired
-- ones it leaves out.
CREATE TABLE IF NOT EXISTS run_failures (
    run_id  VARCHAR NOT NULL,
    test    VARCHAR NOT NULL,   -- '*': the encoder failed for every test
    encoder VARCHAR NOT NULL,   -- '*': the test failed on every encoder
    cause   VARCHAR NOT NULL
);
