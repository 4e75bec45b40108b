-- Order keys of a type that hold later messages, by key: a dead letter with the key (until
-- it is requeued or purged), or the key's first unfinished message when it has failed before
-- (attempts > 0 with an error) and waits for its retry. Each with that message's id, 'dead'
-- or 'retrying', its last error, and how many of the key's messages queue behind it.
-- Parameters: the type tag five times, then the limit.
SELECT h.order_key, h.id, h.state, h.last_error,
       (SELECT COUNT(*) FROM outbox_messages AS w FORCE INDEX (outbox_messages_order_key)
        WHERE w.type_tag = ? AND w.order_key = h.order_key AND w.status = 'queued'
          AND w.id <> h.id) AS waiting
FROM (
    SELECT d.order_key, d.id, 'dead' AS state, d.last_error
    FROM outbox_dead_letters AS d
    WHERE d.type_tag = ? AND d.order_key IS NOT NULL
    UNION ALL
    SELECT m.order_key, m.id, 'retrying' AS state, COALESCE(m.last_error, '')
    FROM outbox_messages AS m
    WHERE m.type_tag = ? AND m.order_key IS NOT NULL AND m.status IN ('queued', 'running')
      AND m.attempts > 0 AND m.last_error IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM outbox_messages AS e FORCE INDEX (outbox_messages_order_key)
                      WHERE e.type_tag = ? AND e.order_key = m.order_key AND e.id < m.id
                        AND e.status IN ('queued', 'running'))
      AND NOT EXISTS (SELECT 1 FROM outbox_dead_letters AS x
                      WHERE x.type_tag = ? AND x.order_key = m.order_key)
) AS h
ORDER BY h.order_key, h.id
LIMIT ?
