-- The probe just taken of breaker $1: failed probes so far, and ms since the last WARN at
-- $2 (unix ms; NULL: the database's clock).
SELECT b.probes_failed, p.now_ms - COALESCE(b.warned_at, 0)
FROM outbox_breakers AS b, (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now_ms) AS p
WHERE b.name = $1
