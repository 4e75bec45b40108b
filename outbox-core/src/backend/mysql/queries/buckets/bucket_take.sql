-- Takes one token if the bucket has one at "now" (unix s): refill since updated_at, cap
-- at capacity, spend one. One row changed = granted. Single-table UPDATE, so the SET
-- list runs left to right (tokens before updated_at).
-- ? now, ? now, ? name, ? now (the same value: unix s; NULL: the database's clock)
UPDATE outbox_rate_buckets
SET tokens = LEAST(capacity, tokens + GREATEST(0, COALESCE(?, @@timestamp) - updated_at) * refill_per_sec) - 1,
    updated_at = GREATEST(updated_at, COALESCE(?, @@timestamp))
WHERE name = ?
  AND LEAST(capacity, tokens + GREATEST(0, COALESCE(?, @@timestamp) - updated_at) * refill_per_sec) >= 1
