-- Inserts a batch of messages given as a JSON array. A taken idempotency key turns the row
-- into a no-op update (not INSERT IGNORE, which would also hide other errors); the caller
-- then reads the key holders back.
-- ?: [{"id","queue","job","due","at","priority","max_attempts","key"}]
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at)
SELECT r.id, r.queue, CAST(r.job AS BINARY), 'queued', 0, r.max_attempts, r.due, r.priority, r.idem_key, r.at
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    id VARCHAR(36) PATH '$.id',
    queue VARCHAR(200) PATH '$.queue',
    job LONGTEXT PATH '$.job',
    due BIGINT PATH '$.due',
    at BIGINT PATH '$.at',
    priority INT PATH '$.priority',
    max_attempts INT PATH '$.max_attempts',
    idem_key VARCHAR(255) PATH '$.key'
)) AS r
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
