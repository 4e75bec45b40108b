-- Counts per type and state, one pass over the queue plus the dead letters, and the due
-- time of the oldest due message. ?1 now (unix ms)
SELECT type_tag,
    SUM(CASE WHEN status = 'queued' AND attempts = 0 AND due_at <= ?1 THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'queued' AND attempts = 0 AND due_at > ?1 THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'queued' AND attempts > 0 THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END),
    0,
    MIN(CASE WHEN status = 'queued' AND due_at <= ?1 THEN due_at END)
FROM outbox_messages
GROUP BY type_tag
UNION ALL
SELECT type_tag, 0, 0, 0, 0, 0, COUNT(*), NULL FROM outbox_dead_letters GROUP BY type_tag
