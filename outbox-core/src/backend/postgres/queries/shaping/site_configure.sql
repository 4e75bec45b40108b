-- Writes a configured site's limits, keeping its tokens and what rules did to it.
-- $1 site, $2 per_second (NULL: no rate), $3 burst, $4 max_concurrent (NULL: no cap),
-- $5 tokens (the burst, for a new row), $6 now (unix s; NULL: the database's clock)
INSERT INTO outbox_sites (site, per_second, burst, max_concurrent, tokens, updated_at, configured)
VALUES ($1, $2, $3, $4, $5, COALESCE($6::float8, extract(epoch FROM now())::float8), 1)
ON CONFLICT (site) DO UPDATE SET per_second = excluded.per_second, burst = excluded.burst,
    max_concurrent = excluded.max_concurrent, configured = 1
