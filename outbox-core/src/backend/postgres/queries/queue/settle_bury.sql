-- Moves given-up messages still leased to $1 for the settled claim into the dead
-- letters with their reason ("text"), which also ends their attempt log, in one
-- statement. $2 now (unix ms; NULL: the database's clock), $3 JSON [{"id","attempt","claim","text"}]
WITH gone AS (
    DELETE FROM outbox_messages AS m
    USING jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer, claim integer, text text)
    WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id')) AND m.id = r.id AND m.claims = r.claim AND m.lease_owner = $1 AND m.status = 'running'
    RETURNING m.id, m.type_tag, m.payload, m.attempts, m.max_attempts, m.priority,
              m.idempotency_key, r.text AS reason, m.enqueued_at, m.attempt_log, m.claims, m.group_name, m.recipient, m.order_key
)
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at, attempt_log, claims, group_name, recipient, order_key)
SELECT id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, reason, enqueued_at, (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)),
       ((CASE WHEN jsonb_array_length(COALESCE(attempt_log, '[]')::jsonb) >= 20
              THEN COALESCE(attempt_log, '[]')::jsonb - 0 ELSE COALESCE(attempt_log, '[]')::jsonb END)
        || jsonb_build_array(jsonb_build_object('attempt', attempts, 'at', (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)), 'error', reason)))::text,
       claims, group_name, recipient, order_key
FROM gone
ON CONFLICT (id) DO UPDATE SET
    attempts = EXCLUDED.attempts, last_error = EXCLUDED.last_error, failed_at = EXCLUDED.failed_at,
    attempt_log = EXCLUDED.attempt_log, claims = EXCLUDED.claims, group_name = EXCLUDED.group_name, recipient = EXCLUDED.recipient, order_key = EXCLUDED.order_key
