-- Up to a batch of suppressed rows stopped more than a window before now, with their
-- groups, locked. ? now (unix ms; NULL: the database's clock), ? window (ms), ? limit
SELECT id, group_name FROM outbox_messages
WHERE status = 'suppressed' AND done_at < COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) - ?
ORDER BY done_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
