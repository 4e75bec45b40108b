-- Forgets the used tokens of kind $1 recorded more than $3 ms before $2 (now, unix ms; NULL:
-- the database's clock).
DELETE FROM outbox_used_tokens
WHERE kind = $1 AND used_at < COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) - $3
