-- Closes a breaker; 0 rows when it was not open. ? name, ? now (unix ms; NULL: the
-- database's clock)
UPDATE outbox_breakers AS b
JOIN (SELECT CAST(? AS CHAR(255)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p ON b.name = p.name
SET b.opened_at = NULL, b.closed_at = p.now_ms, b.probe_at = NULL, b.probe_owner = NULL,
    b.probe_until = NULL
WHERE b.opened_at IS NOT NULL
