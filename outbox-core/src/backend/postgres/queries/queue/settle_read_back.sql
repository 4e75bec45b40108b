-- Where the messages of a settlement batch are now, read back after the commit of a try of
-- that batch went unanswered (its outcome unknown): id, claims, status and last error of
-- those still in the queue. $1 JSON [{"id","claim"}]
SELECT m.id, m.claims, m.status, m.last_error
FROM outbox_messages AS m
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($1::jsonb) ->> 'id'))
