-- Moves queued messages of types not in $1 (JSON array) into the dead letters with reason
-- $2 at $3 (now, unix ms; NULL: the database's clock), in one statement.
WITH gone AS (
    DELETE FROM outbox_messages
    WHERE status = 'queued' AND type_tag NOT IN (SELECT jsonb_array_elements_text($1::jsonb))
    RETURNING id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, enqueued_at, attempt_log, claims, group_name, recipient, order_key
)
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at, attempt_log, claims, group_name, recipient, order_key)
SELECT id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, $2, enqueued_at, (SELECT COALESCE($3::bigint, (extract(epoch FROM now()) * 1000)::bigint)), attempt_log, claims, group_name, recipient, order_key
FROM gone
ON CONFLICT (id) DO UPDATE SET last_error = EXCLUDED.last_error, failed_at = EXCLUDED.failed_at
