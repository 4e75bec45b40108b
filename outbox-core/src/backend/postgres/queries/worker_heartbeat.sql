-- Registers worker $1 of type $2, or records that it is alive, at $3 (now, unix ms; NULL: the
-- database's clock).
INSERT INTO outbox_workers (name, type_tag, started_at, last_seen) VALUES ($1, $2, (SELECT COALESCE($3::bigint, (extract(epoch FROM now()) * 1000)::bigint)), (SELECT COALESCE($3::bigint, (extract(epoch FROM now()) * 1000)::bigint)))
ON CONFLICT (name) DO UPDATE SET last_seen = EXCLUDED.last_seen
