-- A row for a site a rule acts on (no limits of its own). ? site, ? now (unix s; NULL: the
-- database's clock)
INSERT IGNORE INTO outbox_sites (site, per_second, burst, max_concurrent, tokens, updated_at, configured)
VALUES (?, NULL, 1, NULL, 1, COALESCE(?, @@timestamp), 0)
