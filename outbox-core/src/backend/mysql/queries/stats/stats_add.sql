-- Adds a process's outcomes per type to the current minute's rows (in type order, so two
-- processes lock the rows in one order). ? now (unix ms; NULL: the database's clock),
-- ? JSON [[type, delivered, failed, dead]]
INSERT INTO outbox_stats (minute, type_tag, delivered, failed, dead)
SELECT p.minute, r.type_tag, r.delivered, r.failed, r.dead
FROM (SELECT FLOOR(COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) / 60000) * 60000 AS minute) AS p
CROSS JOIN JSON_TABLE(?, '$[*]' COLUMNS (
    type_tag VARCHAR(200) PATH '$[0]', delivered BIGINT PATH '$[1]',
    failed BIGINT PATH '$[2]', dead BIGINT PATH '$[3]')) AS r
WHERE TRUE
ORDER BY r.type_tag
ON DUPLICATE KEY UPDATE
    delivered = outbox_stats.delivered + VALUES(delivered), failed = outbox_stats.failed + VALUES(failed),
    dead = outbox_stats.dead + VALUES(dead)
