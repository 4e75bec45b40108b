-- Inserts a batch of messages given as a JSON array; a taken idempotency key skips the row
-- without an error (the caller's transaction stays usable: no 23505). Returns the ids
-- written. A message with one recipient carries its suppression probe ("a" address, "d"
-- domain entry, "s0".."s3" scopes, "u" 1 when unsubscribes count); when a suppression in
-- force stops it, it is written as `suppressed` (never claimed), the suppression named.
-- Its address (already lowercased) is also its `recipient`; NULL for a row without one.
-- $1: [{"id","queue","job" (payload JSON as a string),"due" (unix ms, or null: "delay" ms
-- after now),"delay","priority","max_attempts","key","group","a","d","s0".."s3","u","o" (the
-- ordering key)}], $2 now
-- (unix ms; NULL: the database's clock)
WITH p AS (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now),
ins AS (
    INSERT INTO outbox_messages
        (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key,
         enqueued_at, group_name, done_at, last_error, recipient, order_key)
    SELECT r.id, r.queue, convert_to(r.job, 'UTF8'),
           CASE WHEN w.why IS NULL THEN 'queued' ELSE 'suppressed' END, 0, r.max_attempts,
           GREATEST(COALESCE(r.due, 0), p.now + COALESCE(r.delay, 0)), r.priority, r.key, p.now,
           r.group, CASE WHEN w.why IS NOT NULL THEN p.now END, w.why, r.a, r.o
    FROM jsonb_to_recordset($1::jsonb)
         AS r(id text, queue text, job text, due bigint, delay bigint, priority integer,
              max_attempts integer, key text, "group" text, a text, d text, s0 text, s1 text,
              s2 text, s3 text, u integer, o text)
    CROSS JOIN p
    LEFT JOIN LATERAL (
        SELECT 'suppressed: ' || s.reason || ' of ' || s.address || ' (' || s.scope || ')' AS why
        FROM outbox_suppressions AS s
        WHERE r.a IS NOT NULL AND s.address IN (r.a, r.d) AND s.scope IN (r.s0, r.s1, r.s2, r.s3)
          AND (s.expires_at IS NULL OR s.expires_at > p.now) AND (r.u = 1 OR s.reason <> 'unsubscribe')
        ORDER BY s.scope, s.address
        LIMIT 1
    ) AS w ON true
    ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, type_tag
)
-- Wakes idle workers of the type at commit (PostgreSQL folds repeats in a transaction).
SELECT ins.id FROM ins CROSS JOIN LATERAL (SELECT pg_notify('outbox_messages', ins.type_tag)) AS woken
