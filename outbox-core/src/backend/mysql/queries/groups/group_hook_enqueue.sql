-- Enqueues a group's completion message (its hook's type, payload, attempts and priority).
-- ? group, ? now (unix ms; NULL: the database's clock), ? id
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, enqueued_at)
SELECT p.id, g.hook_type, g.hook_payload, 'queued', 0, g.hook_max_attempts, p.now_ms, g.hook_priority, p.now_ms
FROM outbox_groups AS g
JOIN (SELECT CAST(? AS CHAR(200)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, CAST(? AS CHAR(36)) AS id) AS p
    ON g.name = p.name
WHERE g.hook_type IS NOT NULL
