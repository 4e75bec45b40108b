-- Removes the matching dead letters that are now in the queue (what this requeue moved).
-- $1 now (unused), $2 id, $3 type, $4 failed before, all optional
DELETE FROM outbox_dead_letters AS d
WHERE ($2::text IS NULL OR d.id = $2) AND ($3::text IS NULL OR d.type_tag = $3) AND ($4::bigint IS NULL OR d.failed_at < $4)
  AND ($5::text IS NULL OR d.recipient = $5)
  AND EXISTS (SELECT 1 FROM outbox_messages AS m WHERE m.id = d.id)
