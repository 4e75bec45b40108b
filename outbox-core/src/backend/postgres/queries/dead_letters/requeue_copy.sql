-- Puts matching dead letters back in the queue, due at $1 (now, unix ms; NULL:
-- the database's clock), attempts reset; a
-- dead letter whose id or key is in the queue already (another requeue, a newer message
-- with its key) is skipped. $2 id, $3 type, $4 failed before (unix ms), $5 recipient, all optional
WITH ins AS (
    INSERT INTO outbox_messages
        (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, attempt_log, claims, group_name, recipient, order_key)
    SELECT id, type_tag, payload, 'queued', 0, max_attempts, n.now, priority, idempotency_key, COALESCE(enqueued_at, n.now), attempt_log, claims, group_name, recipient, order_key
    FROM outbox_dead_letters CROSS JOIN (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
    WHERE ($2::text IS NULL OR id = $2) AND ($3::text IS NULL OR type_tag = $3) AND ($4::bigint IS NULL OR failed_at < $4)
      AND ($5::text IS NULL OR recipient = $5)
    ON CONFLICT DO NOTHING
    RETURNING id, type_tag
)
-- Wakes idle workers of the requeued types at commit.
SELECT ins.id FROM ins CROSS JOIN LATERAL (SELECT pg_notify('outbox_messages', ins.type_tag)) AS woken
