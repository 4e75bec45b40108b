-- Makes the next probe of open breaker $1 due at $2 (unix ms; NULL: the database's clock).
UPDATE outbox_breakers SET probe_at = COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) WHERE name = $1 AND opened_at IS NOT NULL
