-- testing_queued.sql as one JSON text (the test helpers through another connection
-- layer): the unfinished messages of type $1 the connection sees, or NULL.
SELECT json_agg(json_build_object(
    'id', id, 'payload', convert_from(payload, 'UTF8'), 'group', group_name, 'due_at', due_at,
    'priority', priority, 'attempts', attempts, 'max_attempts', max_attempts,
    'key', idempotency_key, 'running', CASE WHEN status = 'running' THEN 1 ELSE 0 END))::text AS j
FROM outbox_messages WHERE type_tag = $1 AND status IN ('queued', 'running')
