-- Creates a bucket full, or changes its rate: tokens earned at the old rate until now are
-- kept, capped at the new capacity (assignments run left to right).
-- ? name, ? capacity, ? refill per second, ? now (unix s; NULL: the database's clock)
INSERT INTO outbox_rate_buckets (name, capacity, refill_per_sec, tokens, updated_at)
SELECT p.name, p.cap, p.refill, p.cap, p.now_s FROM (SELECT ? AS name, ? AS cap, ? AS refill, COALESCE(?, @@timestamp) AS now_s) AS p
ON DUPLICATE KEY UPDATE
    tokens = LEAST(VALUES(capacity), tokens + GREATEST(0, VALUES(updated_at) - updated_at) * refill_per_sec),
    updated_at = GREATEST(updated_at, VALUES(updated_at)),
    capacity = VALUES(capacity),
    refill_per_sec = VALUES(refill_per_sec)
