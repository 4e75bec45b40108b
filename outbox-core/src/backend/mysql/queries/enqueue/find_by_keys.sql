-- Ids of the messages holding the given idempotency keys of one type; a locking read, so
-- it sees rows committed by concurrent transactions whatever the isolation level.
-- ?: type tag, ?: JSON array of keys
SELECT idempotency_key, id
FROM outbox_messages
WHERE type_tag = ?
  AND idempotency_key IN (SELECT k FROM JSON_TABLE(?, '$[*]' COLUMNS (k VARCHAR(255) PATH '$')) AS t)
LOCK IN SHARE MODE
