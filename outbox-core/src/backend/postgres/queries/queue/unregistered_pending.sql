-- Queued messages per type for types not in $1 (JSON array of type tags).
SELECT type_tag, COUNT(*) FROM outbox_messages
WHERE status = 'queued' AND type_tag NOT IN (SELECT jsonb_array_elements_text($1::jsonb))
GROUP BY type_tag ORDER BY type_tag
