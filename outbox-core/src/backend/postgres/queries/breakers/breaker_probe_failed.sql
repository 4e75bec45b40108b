-- $3's probe of breaker $1 failed at $2 (unix ms; NULL: the database's clock) with reason
-- $4: the next one is due $5 ms later; $6 = 1 when a WARN was logged for it now.
UPDATE outbox_breakers AS b
SET probes_failed = b.probes_failed + 1, reason = $4, probe_at = p.now_ms + $5::bigint,
    probe_owner = NULL, probe_until = NULL,
    warned_at = CASE WHEN $6::bigint = 1 THEN p.now_ms ELSE b.warned_at END
FROM (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now_ms) AS p
WHERE b.name = $1 AND b.opened_at IS NOT NULL AND b.probe_owner = $3
