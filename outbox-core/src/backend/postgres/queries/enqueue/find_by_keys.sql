-- Ids of the messages holding the given idempotency keys of one type.
-- $1 type tag, $2 JSON array of keys
SELECT idempotency_key, id FROM outbox_messages
WHERE type_tag = $1 AND idempotency_key IN (SELECT jsonb_array_elements_text($2::jsonb))
