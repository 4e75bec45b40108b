-- Counts per type and state, one pass over the queue plus the dead letters, and the due
-- time of the oldest due message. ? now (unix ms; NULL: the database's clock)
SELECT m.type_tag,
    CAST(SUM(m.status = 'queued' AND m.attempts = 0 AND m.due_at <= p.now_ms) AS SIGNED),
    CAST(SUM(m.status = 'queued' AND m.attempts = 0 AND m.due_at > p.now_ms) AS SIGNED),
    CAST(SUM(m.status = 'running') AS SIGNED),
    CAST(SUM(m.status = 'queued' AND m.attempts > 0) AS SIGNED),
    CAST(SUM(m.status = 'done') AS SIGNED),
    CAST(0 AS SIGNED),
    CAST(MIN(CASE WHEN m.status = 'queued' AND m.due_at <= p.now_ms THEN m.due_at END) AS SIGNED)
FROM outbox_messages AS m CROSS JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
GROUP BY m.type_tag
UNION ALL
SELECT type_tag, 0, 0, 0, 0, 0, COUNT(*), NULL FROM outbox_dead_letters GROUP BY type_tag
