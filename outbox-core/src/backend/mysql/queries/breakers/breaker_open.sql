-- Opens a breaker with a reason, its first probe due some ms later; changes nothing (0
-- rows) when it is open already. ? name, ? now (unix ms; NULL: the database's clock),
-- ? reason, ? ms to the first probe
UPDATE outbox_breakers AS b
JOIN (SELECT CAST(? AS CHAR(255)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms,
             CAST(? AS CHAR) AS reason, CAST(? AS SIGNED) AS first_ms) AS p ON b.name = p.name
SET b.opened_at = p.now_ms, b.reason = p.reason, b.probes_failed = 0,
    b.probe_at = p.now_ms + p.first_ms, b.probe_owner = NULL, b.probe_until = NULL,
    b.warned_at = p.now_ms, b.times_opened = b.times_opened + 1
WHERE b.opened_at IS NULL
