-- Puts matching dead letters back in the queue, due now, attempts reset; a key taken
-- meanwhile by a newer message skips the row. ? now (unix s), ? id, ? type, ? failed before
INSERT INTO outbox_jobs (job, id, job_type, status, attempts, max_attempts, run_at, priority, metadata, idempotency_key)
SELECT d.payload, d.id, d.type_tag, 'Pending', 0, d.max_attempts, p.now_s, d.priority, '{}', d.idempotency_key
FROM outbox_dead_letters AS d
CROSS JOIN (SELECT ? AS now_s, ? AS id, ? AS type_tag, ? AS before_ms) AS p
WHERE (p.id IS NULL OR d.id = p.id) AND (p.type_tag IS NULL OR d.type_tag = p.type_tag) AND (p.before_ms IS NULL OR d.failed_at < p.before_ms)
ON DUPLICATE KEY UPDATE outbox_jobs.id = outbox_jobs.id
