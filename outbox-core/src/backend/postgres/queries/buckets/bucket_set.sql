-- Creates a bucket full, or changes its rate: tokens earned at the old rate until $4 are
-- kept, capped at the new capacity. $1 name, $2 capacity, $3 refill per second, $4 now (unix s; NULL: the database's clock)
INSERT INTO outbox_rate_buckets AS b (name, capacity, refill_per_sec, tokens, updated_at)
VALUES ($1, $2, $3, $2, COALESCE($4::float8, extract(epoch FROM now())::float8))
ON CONFLICT (name) DO UPDATE SET
    tokens = LEAST(excluded.capacity, b.tokens + GREATEST(0, excluded.updated_at - b.updated_at) * b.refill_per_sec),
    updated_at = GREATEST(b.updated_at, excluded.updated_at),
    capacity = excluded.capacity,
    refill_per_sec = excluded.refill_per_sec
