-- Registers workers, or records that they are alive, at ?1 (unix ms). ?2 JSON
-- [{"name","type_tag"}]: every worker of one process, one statement.
INSERT INTO outbox_workers (name, type_tag, started_at, last_seen)
SELECT j.value ->> 'name', j.value ->> 'type_tag', ?1, ?1 FROM json_each(?2) AS j WHERE true
ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen
