-- Copies a given-up message into the dead letters (first half of the move).
-- ? id, ? attempts, ? reason, ? enqueued_at (unix ms), ? failed_at (unix ms)
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at)
SELECT j.id, j.job_type, j.job, p.attempts, j.max_attempts, j.priority, j.idempotency_key, p.reason, p.enq, p.failed
FROM (SELECT ? AS id, ? AS attempts, ? AS reason, ? AS enq, ? AS failed) AS p
JOIN outbox_jobs AS j ON j.id = p.id
ON DUPLICATE KEY UPDATE
    attempts = VALUES(attempts), last_error = VALUES(last_error), failed_at = VALUES(failed_at)
