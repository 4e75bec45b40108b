-- The unfinished messages of a type the connection sees, oldest first (the test helpers).
-- ? type
SELECT id, payload, group_name, due_at, CAST(priority AS SIGNED), CAST(attempts AS SIGNED),
       CAST(max_attempts AS SIGNED), idempotency_key,
       CAST(CASE WHEN status = 'running' THEN 1 ELSE 0 END AS SIGNED)
FROM outbox_messages WHERE type_tag = ? AND status IN ('queued', 'running') ORDER BY id
