-- A page of dead letters, newest first. $1 id, $2 type, $3 failed before (unix ms), $4 recipient, all
-- optional; $5 limit, $6 offset
SELECT id, type_tag, payload, attempts, max_attempts, idempotency_key, last_error, enqueued_at, failed_at, attempt_log
FROM outbox_dead_letters
WHERE ($1::text IS NULL OR id = $1) AND ($2::text IS NULL OR type_tag = $2) AND ($3::bigint IS NULL OR failed_at < $3)
  AND ($4::text IS NULL OR recipient = $4)
ORDER BY failed_at DESC, id DESC
LIMIT $5 OFFSET $6
