-- Deletes a bounded batch of message events recorded more than a window before now. ? now
-- (unix ms; NULL: the database's clock), ? window (ms), ? limit
DELETE FROM outbox_message_events WHERE recorded_at < COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) - ? LIMIT ?
