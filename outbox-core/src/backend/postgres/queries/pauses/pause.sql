-- Pauses a type. $1 type, $2 now (unix ms; NULL: the database's clock), $3 reason
INSERT INTO outbox_paused (type_tag, paused_at, reason) VALUES ($1, (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)), $3)
ON CONFLICT (type_tag) DO UPDATE SET reason = excluded.reason
