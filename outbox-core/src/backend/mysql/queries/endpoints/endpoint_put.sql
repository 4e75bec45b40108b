-- Stores an endpoint: ? kind, ? name, ? settings, ? now (unix ms; NULL: the database's
-- clock): a new one enabled, a known one keeps its state and takes the new settings.
INSERT INTO outbox_endpoints (kind, name, settings, created_at, updated_at)
SELECT p.kind, p.name, p.settings, p.n, p.n
FROM (SELECT ? AS kind, ? AS name, ? AS settings, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS n) AS p
ON DUPLICATE KEY UPDATE settings = VALUES(settings), updated_at = VALUES(updated_at)
