-- Insert a batch of messages given as a JSON array; a taken idempotency key skips the row
-- without an error (the caller's transaction stays usable). Returns the ids written.
-- ?1: [{"id","queue","job" (payload JSON as a string),"run_at","priority","max_attempts","key"}]
INSERT INTO Jobs (
    job, id, job_type, status, attempts, max_attempts, run_at,
    last_result, lock_at, lock_by, done_at, priority, metadata, idempotency_key
)
SELECT
    CAST(value ->> '$.job' AS BLOB),
    value ->> '$.id',
    value ->> '$.queue',
    'Pending',
    0,
    value ->> '$.max_attempts',
    value ->> '$.run_at',
    NULL, NULL, NULL, NULL,
    value ->> '$.priority',
    '{}',
    value ->> '$.key'
FROM json_each(?1)
WHERE true
ON CONFLICT (job_type, idempotency_key) DO NOTHING
RETURNING id
