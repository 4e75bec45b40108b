-- Stores endpoint $2 of kind $1 with settings $3 at $4 (unix ms; NULL: the database's
-- clock): a new one enabled, a known one keeps its state and takes the new settings.
INSERT INTO outbox_endpoints AS e (kind, name, settings, created_at, updated_at)
SELECT $1, $2, $3, p.n, p.n FROM (SELECT COALESCE($4::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS n) AS p
ON CONFLICT (kind, name) DO UPDATE SET settings = EXCLUDED.settings, updated_at = EXCLUDED.updated_at
