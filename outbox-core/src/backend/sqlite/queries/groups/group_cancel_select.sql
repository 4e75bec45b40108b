-- Up to ?2 queued messages of group ?1 enqueued before its latest cancel (running ones are
-- left alone: they finish; later ones are the group's new messages), through the group
-- index: what one batch of a group's cancel deletes (cancel_delete.sql), in the same write
-- transaction.
SELECT id, group_name FROM outbox_messages
WHERE group_name = ?1 AND status = 'queued'
  AND enqueued_at <= (SELECT g.cancelled_at FROM outbox_groups AS g WHERE g.name = ?1)
ORDER BY id
LIMIT ?2
