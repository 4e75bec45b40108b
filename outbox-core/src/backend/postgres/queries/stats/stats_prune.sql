-- Deletes the minutes older than two days before $1 (now, unix ms; NULL: the database's clock).
DELETE FROM outbox_stats
WHERE minute < COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) - 172800000
