-- Due, queued messages of type ? (unless paused) in claim order, locked so concurrent
-- claims skip them. ? type, ? now (unix ms; NULL: the database's clock), ? type again, ? limit
SELECT id, payload, attempts, max_attempts, priority, due_at, claims
FROM outbox_messages FORCE INDEX (outbox_messages_claim)
WHERE type_tag = ? AND status = 'queued' AND due_at <= COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED))
  AND NOT EXISTS (SELECT 1 FROM outbox_paused WHERE type_tag = ?)
ORDER BY priority DESC, due_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
