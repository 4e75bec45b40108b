-- Counts per type and state, one pass over the queue plus the dead letters, and the due
-- time of the oldest due message. $1 now (unix ms; NULL: the database's clock)
SELECT type_tag,
    COUNT(*) FILTER (WHERE status = 'queued' AND attempts = 0 AND due_at <= n.now),
    COUNT(*) FILTER (WHERE status = 'queued' AND attempts = 0 AND due_at > n.now),
    COUNT(*) FILTER (WHERE status = 'running'),
    COUNT(*) FILTER (WHERE status = 'queued' AND attempts > 0),
    COUNT(*) FILTER (WHERE status = 'done'),
    0::bigint,
    MIN(due_at) FILTER (WHERE status = 'queued' AND due_at <= n.now)
FROM outbox_messages CROSS JOIN (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
GROUP BY type_tag
UNION ALL
SELECT type_tag, 0, 0, 0, 0, 0, COUNT(*), NULL FROM outbox_dead_letters GROUP BY type_tag
