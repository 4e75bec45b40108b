-- Up to $3 suppressed rows stopped more than $2 ms before $1 (now, unix ms; NULL: the
-- database's clock), with their groups, locked (another pruner skips them).
SELECT id, group_name FROM outbox_messages
WHERE status = 'suppressed'
  AND done_at < COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) - $2
ORDER BY done_at, id
LIMIT $3
FOR UPDATE SKIP LOCKED
