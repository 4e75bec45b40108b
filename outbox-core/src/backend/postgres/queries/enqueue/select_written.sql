-- What an INSERT … SELECT wrote: how many messages have an id between $1 and $2 (its
-- block), and the payload of the first.
SELECT
    (SELECT COUNT(*) FROM outbox_messages WHERE id BETWEEN $1 AND $2),
    (SELECT payload FROM outbox_messages WHERE id BETWEEN $1 AND $2 ORDER BY id LIMIT 1)
