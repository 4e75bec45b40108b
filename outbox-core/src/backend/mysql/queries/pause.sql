-- Pauses a type. ? type, ? now (unix ms), ? reason
INSERT INTO outbox_paused (type_tag, paused_at, reason) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE reason = VALUES(reason)
