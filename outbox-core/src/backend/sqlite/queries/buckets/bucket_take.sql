-- Takes one token if the bucket has one at ?1 (unix s): refill since updated_at, cap at
-- capacity, spend one. One row changed = granted. ?2 name
UPDATE outbox_rate_buckets
SET tokens = MIN(capacity, tokens + MAX(0, ?1 - updated_at) * refill_per_sec) - 1,
    updated_at = MAX(updated_at, ?1)
WHERE name = ?2
  AND MIN(capacity, tokens + MAX(0, ?1 - updated_at) * refill_per_sec) >= 1
