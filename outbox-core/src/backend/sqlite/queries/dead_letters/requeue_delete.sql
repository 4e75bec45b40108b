-- Removes the matching dead letters that are now in the queue (what this requeue moved).
-- ?1 now (unused), ?2 id, ?3 type, ?4 failed before, all optional
DELETE FROM outbox_dead_letters
WHERE (?2 IS NULL OR id = ?2) AND (?3 IS NULL OR type_tag = ?3) AND (?4 IS NULL OR failed_at < ?4)
  AND (?5 IS NULL OR recipient = ?5)
  AND id IN (SELECT id FROM outbox_messages)
