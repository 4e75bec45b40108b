-- Gives the probe of an open breaker to an owner for a lease, when it is due and nobody
-- holds it (or the holder's lease ran out). ? name, ? now (unix ms; NULL: the database's
-- clock), ? owner, ? lease in ms
UPDATE outbox_breakers AS b
JOIN (SELECT CAST(? AS CHAR(255)) AS name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms,
             CAST(? AS CHAR(255)) AS owner, CAST(? AS SIGNED) AS lease_ms) AS p ON b.name = p.name
SET b.probe_owner = p.owner, b.probe_until = p.now_ms + p.lease_ms
WHERE b.opened_at IS NOT NULL AND b.probe_at <= p.now_ms
  AND (b.probe_owner IS NULL OR b.probe_until <= p.now_ms)
