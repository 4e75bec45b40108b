-- select_written.sql as one JSON text (enqueue through another connection layer):
-- [how many messages have an id between $1 and $2, the first one's payload or null].
SELECT json_build_array(
    (SELECT COUNT(*) FROM outbox_messages WHERE id BETWEEN $1 AND $2),
    (SELECT convert_from(payload, 'UTF8') FROM outbox_messages WHERE id BETWEEN $1 AND $2 ORDER BY id LIMIT 1)
)::text AS j
