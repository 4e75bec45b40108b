-- Every bucket as stored, by name, and the time it is read at. ? now (unix s; NULL: the
-- database's clock)
SELECT name, capacity, refill_per_sec, tokens, updated_at, CAST(COALESCE(?, @@timestamp) AS DOUBLE)
FROM outbox_rate_buckets ORDER BY name
