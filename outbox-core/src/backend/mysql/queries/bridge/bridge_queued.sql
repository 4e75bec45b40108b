-- testing_queued.sql as one JSON text (the test helpers through another connection
-- layer): the unfinished messages of a type the connection sees, or NULL. ? type
SELECT CAST(JSON_ARRAYAGG(JSON_OBJECT(
    'id', id, 'payload', CAST(payload AS CHAR CHARACTER SET utf8mb4), 'group', group_name,
    'due_at', due_at, 'priority', priority, 'attempts', attempts, 'max_attempts', max_attempts,
    'key', idempotency_key, 'running', CASE WHEN status = 'running' THEN 1 ELSE 0 END)) AS CHAR) AS j
FROM outbox_messages WHERE type_tag = ? AND status IN ('queued', 'running')
