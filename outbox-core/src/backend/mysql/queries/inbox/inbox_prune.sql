-- Deletes a bounded batch of inbox rows processed more than a window before now. ? now (unix
-- ms; NULL: the database's clock), ? window (ms), ? limit
DELETE FROM outbox_inbox WHERE processed_at < COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) - ? LIMIT ?
