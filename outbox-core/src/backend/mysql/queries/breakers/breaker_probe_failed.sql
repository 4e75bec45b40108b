-- An owner's probe of a breaker failed: the next one is due some ms later. ? name, ? now
-- (unix ms; NULL: the database's clock), ? owner, ? reason, ? ms to the next probe, ? 1
-- when a WARN was logged for it now
UPDATE outbox_breakers AS b
JOIN (SELECT CAST(? AS CHAR(255)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, CAST(? AS CHAR(255)) AS owner,
             CAST(? AS CHAR) AS reason, CAST(? AS SIGNED) AS next_ms,
             CAST(? AS SIGNED) AS warned) AS p ON b.name = p.name
SET b.probes_failed = b.probes_failed + 1, b.reason = p.reason,
    b.probe_at = p.now_ms + p.next_ms, b.probe_owner = NULL, b.probe_until = NULL,
    b.warned_at = CASE WHEN p.warned = 1 THEN p.now_ms ELSE b.warned_at END
WHERE b.opened_at IS NOT NULL AND b.probe_owner = p.owner
