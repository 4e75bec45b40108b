-- The groups whose completion hook is armed and that have nothing queued or running (their
-- hook is due).
SELECT g.name FROM outbox_groups AS g
WHERE g.hook_type IS NOT NULL AND g.completed_at IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM outbox_messages AS m WHERE m.group_name = g.name AND m.status IN ('queued', 'running')
  )
