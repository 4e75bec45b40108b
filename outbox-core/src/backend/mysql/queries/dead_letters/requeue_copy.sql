-- Puts matching dead letters back in the queue, due now, attempts reset; a dead letter
-- whose id or key is in the queue already (another requeue, a newer message with its key)
-- is skipped. ? now (unix ms; NULL: the database's clock), ? id, ? type, ? failed before (unix ms), ? recipient, all optional
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, attempt_log, claims, group_name, recipient, order_key)
SELECT d.id, d.type_tag, d.payload, 'queued', 0, d.max_attempts, p.now_ms, d.priority, d.idempotency_key,
       COALESCE(d.enqueued_at, p.now_ms), d.attempt_log, d.claims, d.group_name, d.recipient, d.order_key
FROM outbox_dead_letters AS d
CROSS JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, ? AS id, ? AS type_tag, ? AS before_ms, ? AS recipient) AS p
WHERE (p.id IS NULL OR d.id = p.id) AND (p.type_tag IS NULL OR d.type_tag = p.type_tag) AND (p.before_ms IS NULL OR d.failed_at < p.before_ms)
  AND (p.recipient IS NULL OR d.recipient = p.recipient)
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
