-- Pauses a type. ? type, ? now (unix ms; NULL: the database's clock), ? reason
INSERT INTO outbox_paused (type_tag, paused_at, reason) VALUES (?, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)), ?)
ON DUPLICATE KEY UPDATE reason = VALUES(reason)
