-- Registers a worker, or records that it is alive. ? name, ? type, ? now (unix ms; NULL: the database's clock)
INSERT INTO outbox_workers (name, type_tag, started_at, last_seen)
SELECT p.name, p.type_tag, p.now_ms, p.now_ms FROM (SELECT ? AS name, ? AS type_tag, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
ON DUPLICATE KEY UPDATE last_seen = VALUES(last_seen)
