-- Takes one token if the bucket has one at ?2 (unix s): refill since updated_at, cap at
-- capacity, spend one. One row changed = granted. ?1 name
UPDATE outbox_rate_buckets
SET tokens = MIN(capacity, tokens + MAX(0, ?2 - updated_at) * refill_per_sec) - 1,
    updated_at = MAX(updated_at, ?2)
WHERE name = ?1
  AND MIN(capacity, tokens + MAX(0, ?2 - updated_at) * refill_per_sec) >= 1
