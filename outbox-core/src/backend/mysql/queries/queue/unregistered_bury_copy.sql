-- Copies queued messages of types not in the list into the dead letters with a reason;
-- unregistered_bury_delete.sql removes them in the same transaction.
-- ? JSON array of type tags, ? reason, ? now (unix ms; NULL: the database's clock)
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at, attempt_log, claims, group_name, recipient, order_key)
SELECT m.id, m.type_tag, m.payload, m.attempts, m.max_attempts, m.priority, m.idempotency_key, p.reason, m.enqueued_at, p.now_ms, m.attempt_log, m.claims, m.group_name, m.recipient, m.order_key
FROM outbox_messages AS m
CROSS JOIN (SELECT ? AS tags, ? AS reason, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
WHERE m.status = 'queued' AND NOT JSON_CONTAINS(p.tags, JSON_QUOTE(m.type_tag))
ON DUPLICATE KEY UPDATE last_error = VALUES(last_error), failed_at = VALUES(failed_at)
