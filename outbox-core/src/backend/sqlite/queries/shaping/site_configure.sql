-- Writes a configured site's limits, keeping its tokens and what rules did to it.
-- ? site, ? per_second (NULL: no rate), ? burst, ? max_concurrent (NULL: no cap), ? tokens
-- (the burst, for a new row), ? now (unix s; SQLite binds the process clock)
INSERT INTO outbox_sites (site, per_second, burst, max_concurrent, tokens, updated_at, configured)
VALUES (?, ?, ?, ?, ?, ?, 1)
ON CONFLICT (site) DO UPDATE SET per_second = excluded.per_second, burst = excluded.burst,
    max_concurrent = excluded.max_concurrent, configured = 1
