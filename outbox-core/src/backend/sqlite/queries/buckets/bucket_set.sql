-- Creates a bucket full, or changes its rate: tokens earned at the old rate until ?4 are
-- kept, capped at the new capacity. ?1 name, ?2 capacity, ?3 refill per second, ?4 now (unix s)
INSERT INTO outbox_rate_buckets (name, capacity, refill_per_sec, tokens, updated_at)
VALUES (?1, ?2, ?3, ?2, ?4)
ON CONFLICT (name) DO UPDATE SET
    tokens = MIN(excluded.capacity, tokens + MAX(0, excluded.updated_at - updated_at) * refill_per_sec),
    updated_at = MAX(updated_at, excluded.updated_at),
    capacity = excluded.capacity,
    refill_per_sec = excluded.refill_per_sec
