-- A page of dead letters, newest first. ? id, ? type, ? failed before (unix ms), ? recipient, all
-- optional; ? limit, ? offset
SELECT d.id, d.type_tag, d.payload, d.attempts, d.max_attempts, d.idempotency_key, d.last_error, d.enqueued_at, d.failed_at, d.attempt_log
FROM outbox_dead_letters AS d CROSS JOIN (SELECT ? AS id, ? AS type_tag, ? AS before_ms, ? AS recipient) AS p
WHERE (p.id IS NULL OR d.id = p.id) AND (p.type_tag IS NULL OR d.type_tag = p.type_tag) AND (p.before_ms IS NULL OR d.failed_at < p.before_ms)
  AND (p.recipient IS NULL OR d.recipient = p.recipient)
ORDER BY d.failed_at DESC, d.id DESC
LIMIT ? OFFSET ?
