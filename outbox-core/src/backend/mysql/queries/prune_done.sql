-- Deletes a bounded batch of done rows finished before a time. ? before (unix ms), ? limit
DELETE FROM outbox_messages WHERE status = 'done' AND done_at < ? LIMIT ?
