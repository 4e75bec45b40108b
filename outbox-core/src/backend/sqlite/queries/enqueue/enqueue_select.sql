-- Inserts one message per row of the application's query ({select}: columns `payload`, the
-- message as JSON text, and `idempotency_key`, text or NULL), after the query's own
-- parameters: id prefix (each id is the prefix and the row's number in 10 digits), type,
-- max attempts, due (unix ms; NULL: delay ms after now), delay, priority, group, now (unix
-- ms). A taken idempotency key skips the row.
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
SELECT p.prefix || substr('0000000000' || (row_number() OVER ()), -10), p.type_tag,
    CAST(src.payload AS BLOB), 'queued', 0, p.max_attempts,
    MAX(COALESCE(p.due, 0), p.now + p.delay), p.priority, src.idempotency_key, p.now, p.group_name
FROM ({select}) AS src
CROSS JOIN (SELECT ? AS prefix, ? AS type_tag, ? AS max_attempts, ? AS due, ? AS delay,
    ? AS priority, ? AS group_name, ? AS now) AS p
WHERE true
ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
