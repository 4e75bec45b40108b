-- Marks a group's hook as fired now, once: the first caller changes the row, and only it
-- runs group_hook_enqueue.sql in the same transaction. ? group, ? now (unix ms; NULL: the
-- database's clock)
UPDATE outbox_groups AS g
JOIN (SELECT CAST(? AS CHAR(200)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
    ON g.name = p.name
SET g.completed_at = p.now_ms
WHERE g.hook_type IS NOT NULL AND g.completed_at IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM outbox_messages AS m WHERE m.group_name = p.name AND m.status IN ('queued', 'running')
  )
