-- select_written.sql as one JSON text (enqueue through another connection layer): [how
-- many messages have an id in the block, the first one's payload or null].
-- ? lowest id, ? highest id
SELECT CAST(JSON_ARRAY(
    (SELECT COUNT(*) FROM outbox_messages AS m WHERE m.id BETWEEN p.lo AND p.hi),
    (SELECT CAST(m.payload AS CHAR CHARACTER SET utf8mb4) FROM outbox_messages AS m
     WHERE m.id BETWEEN p.lo AND p.hi ORDER BY m.id LIMIT 1)
) AS CHAR) AS j
FROM (SELECT CAST(? AS CHAR(36)) AS lo, CAST(? AS CHAR(36)) AS hi) AS p
