-- Pauses a group (idempotent: a second pause keeps the first time). ? group, ? now (unix
-- ms; NULL: the database's clock), ? reason
INSERT INTO outbox_groups (name, paused_at, pause_reason)
VALUES (?, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)), ?)
ON DUPLICATE KEY UPDATE
    paused_at = COALESCE(outbox_groups.paused_at, VALUES(paused_at)), pause_reason = VALUES(pause_reason)
