-- Due, queued messages of type ? (unless the type or their group is paused, or their group
-- was cancelled after they were enqueued) in claim order, locked so concurrent claims skip
-- them. For types that do not use ordering keys (claim_select_ordered.sql for those that do). ? type, ? now (unix ms; NULL: the database's clock), ? type again, ? limit
SELECT id, payload, attempts, max_attempts, priority, due_at, claims, group_name, enqueued_at
FROM outbox_messages FORCE INDEX (outbox_messages_claim)
WHERE type_tag = ? AND status = 'queued' AND due_at <= COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED))
  AND NOT EXISTS (SELECT 1 FROM outbox_paused WHERE type_tag = ?)
  AND (outbox_messages.group_name IS NULL OR NOT EXISTS (
      SELECT 1 FROM outbox_groups AS g WHERE g.name = outbox_messages.group_name
      AND (g.paused_at IS NOT NULL OR g.cancelled_at >= outbox_messages.enqueued_at)))
ORDER BY priority DESC, due_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
