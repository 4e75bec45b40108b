-- find_by_keys.sql as one JSON text (enqueue through another connection layer): the
-- messages holding the given idempotency keys of one type, as [[key, id], …], or NULL; a
-- locking read, so it sees rows committed by concurrent transactions.
-- ?: type tag, ?: JSON array of keys
SELECT CAST(JSON_ARRAYAGG(JSON_ARRAY(idempotency_key, id)) AS CHAR) AS j
FROM outbox_messages
WHERE type_tag = ?
  AND idempotency_key IN (SELECT k FROM JSON_TABLE(?, '$[*]' COLUMNS (k VARCHAR(255) PATH '$')) AS t)
LOCK IN SHARE MODE
