-- Marks group ?1's hook as fired at ?2 (unix ms), once: the first caller changes the row,
-- and only it runs group_hook_enqueue.sql in the same transaction.
UPDATE outbox_groups SET completed_at = ?2
WHERE name = ?1 AND hook_type IS NOT NULL AND completed_at IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM outbox_messages AS m WHERE m.group_name = ?1 AND m.status IN ('queued', 'running')
  )
