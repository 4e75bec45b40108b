-- Claims up to ?3 due, queued messages of type ?1 (unless the type or their group is paused,
-- or their group was cancelled after they were enqueued; a message with an ordering key only
-- when no earlier message of its type and key is queued, running or a dead letter)
-- in claim order, straight to running, leased to ?4 for ?5 ms, counting the attempt and the
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
      AND (outbox_messages.order_key IS NULL OR (
          NOT EXISTS (SELECT 1 FROM outbox_messages AS o
                      WHERE o.order_key = outbox_messages.order_key AND o.type_tag = outbox_messages.type_tag
                        AND o.id < outbox_messages.id AND o.status IN ('queued', 'running'))
          AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d
                          WHERE d.order_key = outbox_messages.order_key AND d.type_tag = outbox_messages.type_tag)))
    ORDER BY priority DESC, due_at, id
    LIMIT ?3
)
RETURNING id, payload, attempts, max_attempts, priority, due_at, claims, group_name, enqueued_at
