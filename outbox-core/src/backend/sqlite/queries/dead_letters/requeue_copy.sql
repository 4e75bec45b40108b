-- Puts matching dead letters back in the queue, due at ?1 (unix ms), attempts reset; a
-- dead letter whose id or key is in the queue already (another requeue, a newer message
-- with its key) is skipped. ?2 id, ?3 type, ?4 failed before (unix ms), ?5 recipient, all optional
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, attempt_log, claims, group_name, recipient, order_key)
SELECT id, type_tag, payload, 'queued', 0, max_attempts, ?1, priority, idempotency_key, COALESCE(enqueued_at, ?1), attempt_log, claims, group_name, recipient, order_key
FROM outbox_dead_letters
WHERE (?2 IS NULL OR id = ?2) AND (?3 IS NULL OR type_tag = ?3) AND (?4 IS NULL OR failed_at < ?4)
  AND (?5 IS NULL OR recipient = ?5)
ON CONFLICT DO NOTHING
