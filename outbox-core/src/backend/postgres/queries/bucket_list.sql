-- Every bucket as stored, by name.
SELECT name, capacity, refill_per_sec, tokens, updated_at FROM outbox_rate_buckets ORDER BY name
