-- Inserts one message (the common case: one per transaction), without the JSON batch; a
-- taken idempotency key turns it into a no-op update (see enqueue.sql). Due and enqueue
-- times come from the database's clock (a plain VALUES row: a one-row derived table
-- would cost an internal temporary table per message).
-- ? id, ? type, ? payload, ? max attempts, ? due (unix ms; NULL: delay ms after now),
-- ? delay (ms), ? priority, ? key, ? group
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
VALUES (?, ?, ?, 'queued', 0, ?, GREATEST(COALESCE(?, 0), CAST(@@timestamp * 1000 AS SIGNED) + ?),
        ?, ?, CAST(@@timestamp * 1000 AS SIGNED), ?)
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
