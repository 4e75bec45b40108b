-- Deletes suppressed rows. $1 JSON ["id"]
DELETE FROM outbox_messages
WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text($1::jsonb))) AND status = 'suppressed'
