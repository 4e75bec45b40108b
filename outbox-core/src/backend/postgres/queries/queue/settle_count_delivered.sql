-- Counts delivered messages into their groups' rows, before settle_delete.sql or
-- settle_done.sql applies them in the same transaction: only those still leased to $1 for
-- the settled claim (what those statements apply), by group, in name order. Also moves the
-- group's rate window (10 s): a window that has run its length closes, its rate is kept, a
-- new one opens. $2 now (unix ms; NULL: the database's clock), $3 JSON [{"id","attempt","claim"}]
-- of grouped messages
INSERT INTO outbox_groups AS g
    (name, delivered, first_delivered_at, last_delivered_at, window_at, window_delivered)
SELECT m.group_name, COUNT(*), n.now, n.now, n.now, COUNT(*)
FROM outbox_messages AS m
JOIN jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer, claim integer)
    ON m.id = r.id AND m.claims = r.claim
CROSS JOIN (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id'))
  AND m.lease_owner = $1 AND m.status = 'running' AND m.group_name IS NOT NULL
GROUP BY m.group_name, n.now
ORDER BY m.group_name
ON CONFLICT (name) DO UPDATE SET
    delivered = g.delivered + EXCLUDED.delivered,
    first_delivered_at = COALESCE(g.first_delivered_at, EXCLUDED.first_delivered_at),
    last_delivered_at = EXCLUDED.last_delivered_at,
    previous_rate = CASE WHEN g.window_at IS NULL OR EXCLUDED.window_at - g.window_at < 10000 THEN g.previous_rate
        ELSE g.window_delivered * 1000.0 / (EXCLUDED.window_at - g.window_at) END,
    window_delivered = CASE WHEN g.window_at IS NULL OR EXCLUDED.window_at - g.window_at >= 10000
        THEN EXCLUDED.window_delivered ELSE g.window_delivered + EXCLUDED.window_delivered END,
    window_at = CASE WHEN g.window_at IS NULL OR EXCLUDED.window_at - g.window_at >= 10000
        THEN EXCLUDED.window_at ELSE g.window_at END
