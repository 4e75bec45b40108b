-- What every running outbox reads five times a second, in one statement: the paused types
-- (kind 0), the paused groups (kind 1), the open circuit breakers (kind 2) with their
-- probe state at ?1 (unix ms), and the groups cancelled in the last 10 minutes (kind 3, with
-- the cancel's time). Columns: kind, name, since, reason, probes_failed, ms to the
-- next probe, probing, closed_at, times_opened.
SELECT 0, type_tag, paused_at, reason, 0, NULL, 0, NULL, 0 FROM outbox_paused
UNION ALL
SELECT 1, name, paused_at, pause_reason, 0, NULL, 0, NULL, 0
FROM outbox_groups WHERE paused_at IS NOT NULL
UNION ALL
SELECT 2, name, opened_at, reason, probes_failed, MAX(COALESCE(probe_at, ?1) - ?1, 0),
       CASE WHEN probe_owner IS NOT NULL AND probe_until > ?1 THEN 1 ELSE 0 END,
       closed_at, times_opened
FROM outbox_breakers WHERE opened_at IS NOT NULL
UNION ALL
SELECT 3, name, cancelled_at, NULL, 0, NULL, 0, NULL, 0
FROM outbox_groups WHERE cancelled_at > ?1 - 600000
