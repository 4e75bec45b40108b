-- What every running outbox reads five times a second, in one statement: the paused types
-- (kind 0), the paused groups (kind 1), the open circuit breakers (kind 2) with their
-- probe state, and the groups cancelled in the last 10 minutes (kind 3, with the cancel's
-- time) at $1 (unix ms; NULL: the database's clock). Columns: kind, name, since,
-- reason, probes_failed, ms to the next probe, probing, closed_at, times_opened.
SELECT 0, type_tag, paused_at, reason, 0, NULL::bigint, 0, NULL::bigint, 0::bigint FROM outbox_paused
UNION ALL
SELECT 1, name, paused_at, pause_reason, 0, NULL, 0, NULL, 0
FROM outbox_groups WHERE paused_at IS NOT NULL
UNION ALL
SELECT 2, b.name, b.opened_at, b.reason, b.probes_failed,
       GREATEST(COALESCE(b.probe_at, p.now_ms) - p.now_ms, 0),
       CASE WHEN b.probe_owner IS NOT NULL AND b.probe_until > p.now_ms THEN 1 ELSE 0 END,
       b.closed_at, b.times_opened
FROM outbox_breakers AS b,
     (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now_ms) AS p
WHERE b.opened_at IS NOT NULL
UNION ALL
SELECT 3, g.name, g.cancelled_at, NULL, 0, NULL, 0, NULL, 0
FROM outbox_groups AS g,
     (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now_ms) AS p
WHERE g.cancelled_at > p.now_ms - 600000
