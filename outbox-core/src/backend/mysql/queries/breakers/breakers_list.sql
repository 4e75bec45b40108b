-- Every breaker: name, opened_at, reason, probes_failed, ms to the next probe (while open),
-- whether a probe holds a live lease, closed_at, times_opened. ? now (unix ms; NULL: the
-- database's clock)
SELECT b.name, b.opened_at, b.reason, b.probes_failed,
       CASE WHEN b.opened_at IS NOT NULL THEN GREATEST(COALESCE(b.probe_at, p.now_ms) - p.now_ms, 0) END,
       CASE WHEN b.probe_owner IS NOT NULL AND b.probe_until > p.now_ms THEN 1 ELSE 0 END,
       b.closed_at, b.times_opened
FROM outbox_breakers AS b
JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
ORDER BY b.name
