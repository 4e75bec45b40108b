-- Opens breaker $1 at $2 (unix ms; NULL: the database's clock) with reason $3, its first
-- probe due $4 ms later; changes nothing (0 rows) when it is open already.
UPDATE outbox_breakers AS b
SET opened_at = p.now_ms, reason = $3, probes_failed = 0, probe_at = p.now_ms + $4::bigint,
    probe_owner = NULL, probe_until = NULL, warned_at = p.now_ms, times_opened = b.times_opened + 1
FROM (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now_ms) AS p
WHERE b.name = $1 AND b.opened_at IS NULL
