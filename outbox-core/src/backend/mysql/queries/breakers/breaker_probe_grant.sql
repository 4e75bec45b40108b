-- The probe just taken of a breaker: failed probes so far, and ms since the last WARN.
-- ? name, ? now (unix ms; NULL: the database's clock)
SELECT b.probes_failed, p.now_ms - COALESCE(b.warned_at, 0)
FROM outbox_breakers AS b
JOIN (SELECT CAST(? AS CHAR(255)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p ON b.name = p.name
