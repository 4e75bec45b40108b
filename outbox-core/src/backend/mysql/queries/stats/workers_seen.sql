-- The newest heartbeat in the worker registry (unix ms; NULL when no worker is
-- registered), then the read's now: ? (unix ms; NULL: the database's clock).
SELECT MAX(w.last_seen), p.now_ms
FROM (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
LEFT JOIN outbox_workers AS w ON true
GROUP BY p.now_ms
