-- Deletes up to ?2 done rows finished before ?1 (unix ms).
DELETE FROM outbox_messages
WHERE id IN (SELECT id FROM outbox_messages WHERE status = 'done' AND done_at < ?1 LIMIT ?2)
