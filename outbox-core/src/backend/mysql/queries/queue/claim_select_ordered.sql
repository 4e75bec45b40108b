-- Due, queued messages of type ? (unless the type or their group is paused, or their group
-- was cancelled after they were enqueued; a message with an ordering key only when no
-- earlier message of its type and key is queued, running or a dead letter) in claim order,
-- locked so concurrent
-- claims skip them. ? type, ? now (unix ms; NULL: the database's clock), ? type again, ? limit
-- The earlier-message check names its index: left to itself MariaDB 10.11 read the whole
-- table for it (EXPLAIN: type ALL) once per candidate, and an ordered drain of 50,000 ran at
-- 0.02 of the same messages unkeyed.
SELECT id, payload, attempts, max_attempts, priority, due_at, claims, group_name, enqueued_at
FROM outbox_messages FORCE INDEX (outbox_messages_claim)
WHERE type_tag = ? AND status = 'queued' AND due_at <= COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED))
  AND NOT EXISTS (SELECT 1 FROM outbox_paused WHERE type_tag = ?)
  AND (outbox_messages.group_name IS NULL OR NOT EXISTS (
      SELECT 1 FROM outbox_groups AS g WHERE g.name = outbox_messages.group_name
      AND (g.paused_at IS NOT NULL OR g.cancelled_at >= outbox_messages.enqueued_at)))
  AND (outbox_messages.order_key IS NULL OR (
          NOT EXISTS (SELECT 1 FROM outbox_messages AS o FORCE INDEX (outbox_messages_order_key)
                      WHERE o.order_key = outbox_messages.order_key AND o.type_tag = outbox_messages.type_tag
                        AND o.id < outbox_messages.id AND o.status IN ('queued', 'running'))
          AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS d
                          WHERE d.order_key = outbox_messages.order_key AND d.type_tag = outbox_messages.type_tag)))
ORDER BY priority DESC, due_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
