-- Puts matching dead letters back in the queue, due now (?4, unix s), attempts reset; a
-- key taken meanwhile by a newer message skips the row. ?1 id, ?2 type, ?3 failed before
INSERT INTO Jobs (
    job, id, job_type, status, attempts, max_attempts, run_at,
    last_result, lock_at, lock_by, done_at, priority, metadata, idempotency_key
)
SELECT payload, id, type_tag, 'Pending', 0, max_attempts, ?4,
       NULL, NULL, NULL, NULL, priority, '{}', idempotency_key
FROM outbox_dead_letters
WHERE (?1 IS NULL OR id = ?1) AND (?2 IS NULL OR type_tag = ?2) AND (?3 IS NULL OR failed_at < ?3)
ON CONFLICT (job_type, idempotency_key) DO NOTHING
