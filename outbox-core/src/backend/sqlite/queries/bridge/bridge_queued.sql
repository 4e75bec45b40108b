-- testing_queued.sql as one JSON text (the test helpers through another connection
-- layer): the unfinished messages of type ?1 the connection sees.
SELECT json_group_array(json_object(
    'id', id, 'payload', CAST(payload AS TEXT), 'group', group_name, 'due_at', due_at,
    'priority', priority, 'attempts', attempts, 'max_attempts', max_attempts,
    'key', idempotency_key, 'running', CASE WHEN status = 'running' THEN 1 ELSE 0 END)) AS j
FROM outbox_messages WHERE type_tag = ?1 AND status IN ('queued', 'running')
