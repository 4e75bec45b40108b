-- Registers workers, or records that they are alive, at $1 (now, unix ms; NULL: the
-- database's clock). $2 JSON [{"name","type_tag"}]: every worker of one process, one statement.
INSERT INTO outbox_workers (name, type_tag, started_at, last_seen)
SELECT w.name, w.type_tag, n.now_ms, n.now_ms
FROM jsonb_to_recordset($2::jsonb) AS w(name text, type_tag text)
CROSS JOIN (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now_ms) AS n
ON CONFLICT (name) DO UPDATE SET last_seen = EXCLUDED.last_seen
