-- Removes the dead letters that are back in the queue. ?1 id, ?2 type, ?3 failed before
DELETE FROM outbox_dead_letters
WHERE (?1 IS NULL OR id = ?1) AND (?2 IS NULL OR type_tag = ?2) AND (?3 IS NULL OR failed_at < ?3)
  AND id IN (SELECT id FROM Jobs)
