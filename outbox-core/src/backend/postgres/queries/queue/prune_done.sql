-- Deletes up to $3 done rows finished more than $2 ms before $1 (now, unix ms; NULL: the
-- database's clock).
DELETE FROM outbox_messages
WHERE id IN (SELECT id FROM outbox_messages WHERE status = 'done' AND done_at < (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint)) - $2 LIMIT $3)
