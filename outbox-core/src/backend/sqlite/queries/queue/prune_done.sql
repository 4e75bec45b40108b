-- Deletes up to ?3 done rows finished more than ?2 ms before ?1 (now, unix ms).
DELETE FROM outbox_messages
WHERE id IN (SELECT id FROM outbox_messages WHERE status = 'done' AND done_at < ?1 - ?2 LIMIT ?3)
