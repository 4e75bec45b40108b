-- Deletes matching dead letters. ?1 id, ?2 type, ?3 failed before (unix ms), ?4 recipient, all optional
DELETE FROM outbox_dead_letters
WHERE (?1 IS NULL OR id = ?1) AND (?2 IS NULL OR type_tag = ?2) AND (?3 IS NULL OR failed_at < ?3)
  AND (?4 IS NULL OR recipient = ?4)
