-- find_by_keys.sql as one JSON text (enqueue through another connection layer): the
-- messages holding the given idempotency keys of one type, as [[key, id], …], or NULL.
-- $1 type tag, $2 JSON array of keys
SELECT json_agg(json_build_array(idempotency_key, id))::text AS j FROM outbox_messages
WHERE type_tag = $1 AND idempotency_key IN (SELECT jsonb_array_elements_text($2::jsonb))
