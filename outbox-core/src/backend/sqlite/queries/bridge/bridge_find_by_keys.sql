-- find_by_keys.sql as one JSON text (enqueue through another connection layer): the
-- messages holding the given idempotency keys of one type, as [[key, id], …].
-- ?1 type tag, ?2 JSON array of keys
SELECT json_group_array(json_array(idempotency_key, id)) AS j FROM outbox_messages
WHERE type_tag = ?1 AND idempotency_key IN (SELECT value FROM json_each(?2))
