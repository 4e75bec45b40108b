-- Inserts one message (the common case: one per transaction), without the JSON batch;
-- a taken idempotency key skips it without an error (no 23505). Returns the id if written.
-- $1 id, $2 type, $3 payload, $4 max attempts, $5 due (unix ms; NULL: $9 ms after now),
-- $6 priority, $7 key, $8 now (unix ms; NULL: the database's clock), $9 delay (ms), $10 group
WITH ins AS (
    INSERT INTO outbox_messages
        (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
    SELECT $1, $2, $3, 'queued', 0, $4, GREATEST(COALESCE($5, 0), n.now + $9), $6, $7, n.now, $10
    FROM (SELECT COALESCE($8::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
    ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, type_tag
)
-- Wakes idle workers of the type at commit (PostgreSQL folds repeats in a transaction).
SELECT ins.id FROM ins CROSS JOIN LATERAL (SELECT pg_notify('outbox_messages', ins.type_tag)) AS woken
