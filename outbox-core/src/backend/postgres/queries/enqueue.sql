-- Inserts a batch of messages given as a JSON array; a taken idempotency key skips the row
-- without an error (the caller's transaction stays usable: no 23505). Returns the ids
-- written. $1: [{"id","queue","job" (payload JSON as a string),"due" (unix ms, or null: "delay" ms
-- after now),"delay","priority","max_attempts","key","group"}], $2 now (unix ms; NULL: the database's clock)
WITH ins AS (
    INSERT INTO outbox_messages
        (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
    SELECT r.id, r.queue, convert_to(r.job, 'UTF8'), 'queued', 0, r.max_attempts, GREATEST(COALESCE(r.due, 0), (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)) + COALESCE(r.delay, 0)),
           r.priority, r.key, (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)), r.group
    FROM jsonb_to_recordset($1::jsonb)
         AS r(id text, queue text, job text, due bigint, delay bigint, priority integer, max_attempts integer, key text, "group" text)
    ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, type_tag
)
-- Wakes idle workers of the type at commit (PostgreSQL folds repeats in a transaction).
SELECT ins.id FROM ins CROSS JOIN LATERAL (SELECT pg_notify('outbox_messages', ins.type_tag)) AS woken
