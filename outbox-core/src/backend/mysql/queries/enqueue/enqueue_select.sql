-- Inserts one message per row of the application's query ({select}: columns `payload`, the
-- message as JSON text, and `idempotency_key`, text or NULL), after the query's own
-- parameters: id prefix (each id is the prefix and the row's number in 10 digits), type,
-- max attempts, due (unix ms; NULL: delay ms after now), delay, priority, group, now (unix
-- ms; NULL: the database's clock). A taken idempotency key turns the row into a no-op
-- update (see enqueue.sql).
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
SELECT CONCAT(p.prefix, LPAD(ROW_NUMBER() OVER (), 10, '0')), p.type_tag,
    CAST(src.payload AS BINARY), 'queued', 0, p.max_attempts,
    GREATEST(COALESCE(p.due, 0), p.now_ms + p.delay), p.priority, src.idempotency_key, p.now_ms, p.group_name
FROM ({select}) AS src
CROSS JOIN (SELECT ? AS prefix, ? AS type_tag, ? AS max_attempts, ? AS due, ? AS delay,
    ? AS priority, ? AS group_name, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
WHERE TRUE
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
