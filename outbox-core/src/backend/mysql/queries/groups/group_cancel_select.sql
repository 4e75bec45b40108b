-- Up to ? queued messages of group ? enqueued before its latest cancel (running ones are
-- left alone: they finish; later ones are the group's new messages), through the group
-- index, locked (not the group's row: a subquery of a locking read is not locked): what one
-- batch of a group's cancel deletes (cancel_delete.sql), in the same transaction.
-- ? group, ? batch size
SELECT id, group_name FROM outbox_messages FORCE INDEX (outbox_messages_group)
WHERE group_name = ? AND status = 'queued'
  AND enqueued_at <= (SELECT g.cancelled_at FROM outbox_groups AS g
                      WHERE g.name = outbox_messages.group_name)
ORDER BY id
LIMIT ?
FOR UPDATE
