-- Makes the next probe of an open breaker due now. ? name, ? now (unix ms; NULL: the
-- database's clock)
UPDATE outbox_breakers AS b
JOIN (SELECT CAST(? AS CHAR(255)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p ON b.name = p.name
SET b.probe_at = p.now_ms
WHERE b.opened_at IS NOT NULL
