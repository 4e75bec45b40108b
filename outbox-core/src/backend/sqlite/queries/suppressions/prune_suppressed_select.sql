-- Up to ?3 suppressed rows stopped more than ?2 ms before ?1 (now, unix ms), with their
-- groups (read in the write transaction that deletes them).
SELECT id, group_name FROM outbox_messages
WHERE status = 'suppressed' AND done_at < ?1 - ?2
ORDER BY done_at, id
LIMIT ?3
