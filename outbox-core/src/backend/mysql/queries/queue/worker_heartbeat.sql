-- Registers workers, or records that they are alive: every worker of one process, one
-- statement. ? now (unix ms; NULL: the database's clock), ? JSON [{"name","type_tag"}]
INSERT INTO outbox_workers (name, type_tag, started_at, last_seen)
SELECT b.name, b.type_tag, b.now_ms, b.now_ms FROM (
    SELECT w.name, w.type_tag, p.now_ms
    FROM (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
    JOIN JSON_TABLE(?, '$[*]' COLUMNS (name VARCHAR(255) PATH '$.name', type_tag VARCHAR(200) PATH '$.type_tag')) AS w
) AS b
ON DUPLICATE KEY UPDATE last_seen = VALUES(last_seen)
