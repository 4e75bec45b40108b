-- Gives the probe of open breaker $1 to $3 for $4 ms from $2 (unix ms; NULL: the
-- database's clock), when it is due and nobody holds it (or the holder's lease ran out).
UPDATE outbox_breakers AS b SET probe_owner = $3, probe_until = p.now_ms + $4::bigint
FROM (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now_ms) AS p
WHERE b.name = $1 AND b.opened_at IS NOT NULL AND b.probe_at <= p.now_ms
  AND (b.probe_owner IS NULL OR b.probe_until <= p.now_ms)
