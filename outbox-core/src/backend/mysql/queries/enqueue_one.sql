-- Inserts one message (the common case: one per transaction), without the JSON batch; a
-- taken idempotency key turns it into a no-op update (see enqueue.sql).
-- ? id, ? type, ? payload, ? max attempts, ? due (unix ms; NULL: delay ms after now),
-- ? priority, ? key, ? now (unix ms; NULL: the database's clock), ? delay (ms)
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at)
SELECT p.id, p.type_tag, p.payload, 'queued', 0, p.max_attempts, GREATEST(COALESCE(p.due, 0), p.now_ms + p.delay), p.priority, p.idem_key, p.now_ms
FROM (SELECT ? AS id, ? AS type_tag, ? AS payload, ? AS max_attempts, ? AS due, ? AS priority, ? AS idem_key,
        COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, ? AS delay) AS p
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
