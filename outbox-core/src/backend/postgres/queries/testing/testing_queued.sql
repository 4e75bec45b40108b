-- The unfinished messages of type $1 the connection sees, oldest first (the test helpers).
SELECT id, payload, group_name, due_at, priority::bigint, attempts::bigint, max_attempts::bigint,
       idempotency_key, CASE WHEN status = 'running' THEN 1::bigint ELSE 0::bigint END
FROM outbox_messages WHERE type_tag = $1 AND status IN ('queued', 'running') ORDER BY id
