-- Forgets the used tokens of kind ?1 recorded more than ?3 ms before ?2 (now, unix ms).
DELETE FROM outbox_used_tokens WHERE kind = ?1 AND used_at < ?2 - ?3
