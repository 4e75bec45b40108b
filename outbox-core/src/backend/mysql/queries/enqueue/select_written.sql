-- What an INSERT … SELECT wrote: how many messages have an id in its block, and the
-- payload of the first. ? lowest id, ? highest id
SELECT
    (SELECT COUNT(*) FROM outbox_messages AS m WHERE m.id BETWEEN p.lo AND p.hi),
    (SELECT m.payload FROM outbox_messages AS m WHERE m.id BETWEEN p.lo AND p.hi ORDER BY m.id LIMIT 1)
FROM (SELECT CAST(? AS CHAR(36)) AS lo, CAST(? AS CHAR(36)) AS hi) AS p
