-- Copies queued messages of types not in ?1 (JSON array) into the dead letters with reason
-- ?2 at ?3 (unix ms); unregistered_bury_delete.sql removes them in the same transaction.
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at, attempt_log, claims, group_name, recipient, order_key)
SELECT id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, ?2, enqueued_at, ?3, attempt_log, claims, group_name, recipient, order_key
FROM outbox_messages
WHERE status = 'queued' AND type_tag NOT IN (SELECT value FROM json_each(?1))
ON CONFLICT (id) DO UPDATE SET last_error = excluded.last_error, failed_at = excluded.failed_at
