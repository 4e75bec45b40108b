-- Every breaker as of ?1 (unix ms): name, opened_at, reason, probes_failed, ms to the next
-- probe (while open), whether a probe holds a live lease, closed_at, times_opened.
SELECT name, opened_at, reason, probes_failed,
       CASE WHEN opened_at IS NOT NULL THEN MAX(COALESCE(probe_at, ?1) - ?1, 0) END,
       CASE WHEN probe_owner IS NOT NULL AND probe_until > ?1 THEN 1 ELSE 0 END,
       closed_at, times_opened
FROM outbox_breakers ORDER BY name
