-- Claims up to ?3 due, queued messages of type ?1 (unless the type or their group is paused,
-- or their group was cancelled after they were enqueued) in claim order (types that do not use
-- ordering keys; claim_ordered.sql for those that do), straight to running, leased to ?4 for ?5 ms, counting the attempt and the
-- claim (the fencing token its settlement names; never given back). ?2 now (unix ms)
UPDATE outbox_messages
SET status = 'running', attempts = attempts + 1, claims = claims + 1, lease_owner = ?4, lease_expires_at = ?2 + ?5
WHERE id IN (
    SELECT id FROM outbox_messages
    WHERE status = 'queued' AND type_tag = ?1 AND due_at <= ?2
      AND NOT EXISTS (SELECT 1 FROM outbox_paused WHERE type_tag = ?1)
      AND (group_name IS NULL OR NOT EXISTS (
          SELECT 1 FROM outbox_groups AS g WHERE g.name = group_name
          AND (g.paused_at IS NOT NULL OR g.cancelled_at >= enqueued_at)))
    ORDER BY priority DESC, due_at, id
    LIMIT ?3
)
RETURNING id, payload, attempts, max_attempts, priority, due_at, claims, group_name, enqueued_at
