-- Puts matching dead letters back in the queue, due now ($1, unix s), attempts reset; a
-- key taken meanwhile by a newer message skips the row. $2 id, $3 type, $4 failed before
INSERT INTO apalis.jobs (id, job_type, job, status, attempts, max_attempts, run_at, priority, metadata, idempotency_key)
SELECT id, type_tag, payload, 'Pending', 0, max_attempts, to_timestamp($1), priority, ''::hstore, idempotency_key
FROM outbox_dead_letters
WHERE ($2::text IS NULL OR id = $2) AND ($3::text IS NULL OR type_tag = $3) AND ($4::bigint IS NULL OR failed_at < $4)
ON CONFLICT (job_type, idempotency_key) DO NOTHING
