-- Deletes the queued messages of $1 (JSON array of ids) that a cancel selected and locked in
-- this transaction.
DELETE FROM outbox_messages
WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb))) AND status = 'queued'
