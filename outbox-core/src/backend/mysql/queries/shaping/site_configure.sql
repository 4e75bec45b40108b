-- Writes a configured site's limits, keeping its tokens and what rules did to it.
-- ? site, ? per_second (NULL: no rate), ? burst, ? max_concurrent (NULL: no cap), ? tokens
-- (the burst, for a new row), ? now (unix s; NULL: the database's clock)
INSERT INTO outbox_sites (site, per_second, burst, max_concurrent, tokens, updated_at, configured)
VALUES (?, ?, ?, ?, ?, COALESCE(?, @@timestamp), 1)
ON DUPLICATE KEY UPDATE per_second = VALUES(per_second), burst = VALUES(burst),
    max_concurrent = VALUES(max_concurrent), configured = 1
