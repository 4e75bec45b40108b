-- A bucket as stored, and the time it is read at. $1 name, $2 now (unix s; NULL: the
-- database's clock)
SELECT capacity, refill_per_sec, tokens, updated_at, COALESCE($2::float8, extract(epoch FROM now())::float8) FROM outbox_rate_buckets WHERE name = $1
