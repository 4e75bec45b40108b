-- Inserts one message per row of the application's query ({select}: columns `payload`, the
-- message as JSON (text or jsonb), and `idempotency_key`, text or NULL); the query's own
-- parameters come first ($1 … below are moved past them). $1 id prefix (each id is the
-- prefix and the row's number in 10 digits), $2 type, $3 max attempts, $4 due (unix ms;
-- NULL: $5 ms after now), $5 delay, $6 priority, $7 group, $8 now (unix ms; NULL: the
-- database's clock). A taken idempotency key skips the row. Returns how many it wrote.
WITH ins AS (
    INSERT INTO outbox_messages
        (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
    SELECT p.prefix || lpad((row_number() OVER ())::text, 10, '0'), p.type_tag,
        convert_to(src.payload::text, 'UTF8'), 'queued', 0, p.max_attempts,
        GREATEST(COALESCE(p.due, 0), p.now + p.delay), p.priority, src.idempotency_key, p.now, p.group_name
    FROM ({select}) AS src
    CROSS JOIN (SELECT $1::text AS prefix, $2::text AS type_tag, $3::integer AS max_attempts,
        $4::bigint AS due, $5::bigint AS delay, $6::integer AS priority, $7::text AS group_name,
        COALESCE($8::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS p
    ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING type_tag
)
SELECT COUNT(*) FROM ins
