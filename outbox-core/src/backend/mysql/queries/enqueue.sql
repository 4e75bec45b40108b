-- Inserts a batch of messages given as a JSON array. A taken idempotency key turns the row
-- into a no-op update (not INSERT IGNORE, which would also hide other errors); the caller
-- then reads the key holders back.
-- ?: [{"id","queue","job","due" (unix ms, or null: "delay" ms after now),"delay","priority",
-- "max_attempts","key","group"}], ? now (unix ms; NULL: the database's clock)
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
SELECT r.id, r.queue, CAST(r.job AS BINARY), 'queued', 0, r.max_attempts, GREATEST(COALESCE(r.due, 0), p.now_ms + COALESCE(r.delay, 0)), r.priority, r.idem_key, p.now_ms, r.group_name
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    id VARCHAR(36) PATH '$.id',
    queue VARCHAR(200) PATH '$.queue',
    job LONGTEXT PATH '$.job',
    due BIGINT PATH '$.due',
    delay BIGINT PATH '$.delay',
    priority INT PATH '$.priority',
    max_attempts INT PATH '$.max_attempts',
    idem_key VARCHAR(255) PATH '$.key',
    group_name VARCHAR(200) PATH '$.group'
)) AS r, (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
