-- Up to ? queued messages of group ? (running ones are left alone: they finish), through
-- the group index, locked: what one batch of a group's cancel deletes (cancel_delete.sql),
-- in the same transaction. ? group, ? batch size
SELECT id, group_name FROM outbox_messages FORCE INDEX (outbox_messages_group)
WHERE group_name = ? AND status = 'queued'
ORDER BY id
LIMIT ?
FOR UPDATE
