-- Inserts one message (the common case: one per transaction), without the JSON batch; a
-- taken idempotency key turns it into a no-op update (see enqueue.sql).
-- ? id, ? type, ? payload, ? max attempts, ? due (unix ms), ? priority, ? key,
-- ? enqueued at (unix ms)
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at)
VALUES (?, ?, ?, 'queued', 0, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
