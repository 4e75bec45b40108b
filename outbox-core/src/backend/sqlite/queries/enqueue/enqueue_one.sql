-- Inserts one message (the common case: one per transaction), without the JSON batch;
-- a taken idempotency key skips it without an error. No `RETURNING`: the row count says
-- whether it was written.
-- ?1 id, ?2 type, ?3 payload, ?4 max attempts, ?5 due (unix ms; NULL: ?9 ms after now),
-- ?6 priority, ?7 key, ?8 now (unix ms), ?9 delay (ms), ?10 group
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
VALUES (?1, ?2, ?3, 'queued', 0, ?4, MAX(COALESCE(?5, 0), ?8 + ?9), ?6, ?7, ?8, ?10)
ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
