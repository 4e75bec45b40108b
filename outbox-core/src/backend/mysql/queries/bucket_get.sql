-- A bucket as stored. ? name
SELECT capacity, refill_per_sec, tokens, updated_at FROM outbox_rate_buckets WHERE name = ?
