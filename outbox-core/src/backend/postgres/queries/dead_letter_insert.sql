-- Copies a given-up message into the dead letters (first half of the move).
-- $1 id, $2 attempts, $3 reason, $4 enqueued_at (unix ms), $5 failed_at (unix ms)
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at)
SELECT id, job_type, job, $2, max_attempts, priority, idempotency_key, $3, $4, $5
FROM apalis.jobs WHERE id = $1
ON CONFLICT (id) DO UPDATE SET
    attempts = excluded.attempts, last_error = excluded.last_error, failed_at = excluded.failed_at
