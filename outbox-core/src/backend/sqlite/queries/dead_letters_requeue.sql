-- Puts matching dead letters back in the queue, due now (?1, unix s), attempts reset; a
-- key taken meanwhile by a newer message skips the row. ?2 id, ?3 type, ?4 failed before
INSERT INTO Jobs (
    job, id, job_type, status, attempts, max_attempts, run_at,
    last_result, lock_at, lock_by, done_at, priority, metadata, idempotency_key
)
SELECT payload, id, type_tag, 'Pending', 0, max_attempts, ?1,
       NULL, NULL, NULL, NULL, priority, '{}', idempotency_key
FROM outbox_dead_letters
WHERE (?2 IS NULL OR id = ?2) AND (?3 IS NULL OR type_tag = ?3) AND (?4 IS NULL OR failed_at < ?4)
ON CONFLICT (job_type, idempotency_key) DO NOTHING
