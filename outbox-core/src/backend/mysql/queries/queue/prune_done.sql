-- Deletes a bounded batch of done rows finished more than a window before now. ? now (unix
-- ms; NULL: the database's clock), ? window (ms), ? limit
DELETE FROM outbox_messages WHERE status = 'done' AND done_at < COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) - ? LIMIT ?
