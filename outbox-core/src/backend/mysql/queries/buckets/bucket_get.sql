-- A bucket as stored, and the time it is read at. ? name, ? now (unix s; NULL: the
-- database's clock)
SELECT capacity, refill_per_sec, tokens, updated_at, CAST(p.now_s AS DOUBLE)
FROM outbox_rate_buckets CROSS JOIN (SELECT ? AS name, COALESCE(?, @@timestamp) AS now_s) AS p WHERE outbox_rate_buckets.name = p.name
