-- Every bucket as stored, by name, and the time it is read at. $1 now (unix s; NULL: the
-- database's clock)
SELECT name, capacity, refill_per_sec, tokens, updated_at, COALESCE($1::float8, extract(epoch FROM now())::float8) FROM outbox_rate_buckets ORDER BY name
