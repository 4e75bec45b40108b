-- Every bucket as stored, by name, and the time it is read at. ?1 now (unix s)
SELECT name, capacity, refill_per_sec, tokens, updated_at, ?1 FROM outbox_rate_buckets ORDER BY name
