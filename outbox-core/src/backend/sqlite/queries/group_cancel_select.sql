-- Up to ?2 queued messages of group ?1 (running ones are left alone: they finish), through
-- the group index: what one batch of a group's cancel deletes (cancel_delete.sql), in the
-- same write transaction.
SELECT id, group_name FROM outbox_messages
WHERE group_name = ?1 AND status = 'queued'
ORDER BY id
LIMIT ?2
