-- Takes one token if the bucket has one at $1 (now, unix s; NULL: the database's
-- clock): refill since updated_at, cap at
-- capacity, spend one. One row changed = granted. $2 name
UPDATE outbox_rate_buckets AS b
SET tokens = LEAST(capacity, tokens + GREATEST(0, n.now - b.updated_at) * refill_per_sec) - 1,
    updated_at = GREATEST(b.updated_at, n.now)
FROM (SELECT COALESCE($1::float8, extract(epoch FROM now())::float8) AS now) AS n
WHERE b.name = $2
  AND LEAST(capacity, tokens + GREATEST(0, n.now - b.updated_at) * refill_per_sec) >= 1
