-- A bucket as stored, and the time it is read at. ?1 name, ?2 now (unix s)
SELECT capacity, refill_per_sec, tokens, updated_at, ?2 FROM outbox_rate_buckets WHERE name = ?1
