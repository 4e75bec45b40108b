-- Counts delivered messages into their groups' rows, before settle_delete.sql or
-- settle_done.sql applies them in the same transaction: only those still leased to the
-- worker for the settled claim (what those statements apply), by group, in name order. Also
-- moves the group's rate window (10 s): a window that has run its length closes, its rate is
-- kept, a new one opens (MariaDB assigns left to right: each assignment reads the columns
-- the ones before it left). ? worker, ? now (unix ms; NULL: the database's clock),
-- ? JSON [{"id","attempt","claim"}] of grouped messages
INSERT INTO outbox_groups
    (name, delivered, first_delivered_at, last_delivered_at, window_at, window_delivered)
SELECT m.group_name, COUNT(*), p.now_ms, p.now_ms, p.now_ms, COUNT(*)
FROM outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', claim INT PATH '$.claim')) AS r
    ON m.id = r.id AND m.claims = r.claim
WHERE m.lease_owner = p.owner AND m.status = 'running' AND m.group_name IS NOT NULL
GROUP BY m.group_name, p.now_ms
ORDER BY m.group_name
ON DUPLICATE KEY UPDATE
    previous_rate = IF(outbox_groups.window_at IS NULL OR VALUES(window_at) - outbox_groups.window_at < 10000,
        outbox_groups.previous_rate,
        outbox_groups.window_delivered * 1000.0 / (VALUES(window_at) - outbox_groups.window_at)),
    window_delivered = IF(outbox_groups.window_at IS NULL OR VALUES(window_at) - outbox_groups.window_at >= 10000,
        VALUES(window_delivered), outbox_groups.window_delivered + VALUES(window_delivered)),
    window_at = IF(outbox_groups.window_at IS NULL OR VALUES(window_at) - outbox_groups.window_at >= 10000,
        VALUES(window_at), outbox_groups.window_at),
    delivered = outbox_groups.delivered + VALUES(delivered),
    first_delivered_at = COALESCE(outbox_groups.first_delivered_at, VALUES(first_delivered_at)),
    last_delivered_at = VALUES(last_delivered_at)
