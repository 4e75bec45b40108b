-- Counts delivered messages into their groups' rows, before settle_delete.sql or
-- settle_done.sql applies them in the same transaction: only those still leased to ?1 for
-- the settled claim (what those statements apply), by group. Also moves the group's rate
-- window (10 s): a window that has run its length closes, its rate is kept, a new one
-- opens. ?2 now (unix ms), ?3 JSON [{"id","attempt","claim"}] of grouped messages
INSERT INTO outbox_groups
    (name, delivered, first_delivered_at, last_delivered_at, window_at, window_delivered)
SELECT m.group_name, COUNT(*), ?2, ?2, ?2, COUNT(*)
FROM json_each(?3) AS j
JOIN outbox_messages AS m ON m.id = j.value ->> 'id' AND m.claims = j.value ->> 'claim'
WHERE m.lease_owner = ?1 AND m.status = 'running' AND m.group_name IS NOT NULL
GROUP BY m.group_name
ON CONFLICT (name) DO UPDATE SET
    delivered = delivered + excluded.delivered,
    first_delivered_at = COALESCE(first_delivered_at, excluded.first_delivered_at),
    last_delivered_at = excluded.last_delivered_at,
    previous_rate = CASE WHEN window_at IS NULL OR excluded.window_at - window_at < 10000 THEN previous_rate
        ELSE window_delivered * 1000.0 / (excluded.window_at - window_at) END,
    window_delivered = CASE WHEN window_at IS NULL OR excluded.window_at - window_at >= 10000
        THEN excluded.window_delivered ELSE window_delivered + excluded.window_delivered END,
    window_at = CASE WHEN window_at IS NULL OR excluded.window_at - window_at >= 10000
        THEN excluded.window_at ELSE window_at END
