-- Deletes the minutes older than two days before now. ? now (unix ms; NULL: the
-- database's clock)
DELETE FROM outbox_stats
WHERE minute < COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) - 172800000
