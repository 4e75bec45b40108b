-- Deletes the minutes older than two days before ?1 (now, unix ms).
DELETE FROM outbox_stats WHERE minute < ?1 - 172800000
