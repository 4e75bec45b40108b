-- The newest heartbeat in the worker registry (unix ms; NULL when no worker is
-- registered), then the read's now: $1 (unix ms; NULL: the database's clock).
SELECT MAX(w.last_seen), n.now
FROM (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
LEFT JOIN outbox_workers AS w ON true
GROUP BY n.now
