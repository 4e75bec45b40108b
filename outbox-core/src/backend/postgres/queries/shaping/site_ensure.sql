-- A row for a site a rule acts on (no limits of its own). $1 site, $2 now (unix s; NULL:
-- the database's clock)
INSERT INTO outbox_sites (site, per_second, burst, max_concurrent, tokens, updated_at, configured)
VALUES ($1, NULL, 1, NULL, 1, COALESCE($2::float8, extract(epoch FROM now())::float8), 0)
ON CONFLICT (site) DO NOTHING
