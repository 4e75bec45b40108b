-- Deletes the queued messages of ?1 (JSON array of ids) that a cancel selected in this
-- write transaction.
DELETE FROM outbox_messages
WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'queued'
