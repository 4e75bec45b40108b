-- Forgets the used tokens of a kind recorded more than a window before now. ? kind, ? now
-- (unix ms; NULL: the database's clock), ? window (ms)
DELETE FROM outbox_used_tokens
WHERE kind = ? AND used_at < COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) - ?
