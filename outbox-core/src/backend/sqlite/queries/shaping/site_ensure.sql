-- A row for a site a rule acts on (no limits of its own). ? site, ? now (unix s; SQLite
-- binds the process clock)
INSERT INTO outbox_sites (site, per_second, burst, max_concurrent, tokens, updated_at, configured)
VALUES (?, NULL, 1, NULL, 1, ?, 0)
ON CONFLICT (site) DO NOTHING
