-- Counts per type and state, one pass over the queue plus the dead letters: pending,
-- scheduled, running, retrying, done, dead, the due time of the oldest due message, and
-- paused (queued messages of a paused type or group, counted in no other state; joined, not
-- looked up per row), and suppressed (kept rows of messages a suppression stopped). ?1 now (unix ms)
SELECT s.type_tag,
    SUM(CASE WHEN s.status = 'queued' AND NOT s.paused AND s.attempts = 0 AND s.due_at <= ?1 THEN 1 ELSE 0 END),
    SUM(CASE WHEN s.status = 'queued' AND NOT s.paused AND s.attempts = 0 AND s.due_at > ?1 THEN 1 ELSE 0 END),
    SUM(CASE WHEN s.status = 'running' THEN 1 ELSE 0 END),
    SUM(CASE WHEN s.status = 'queued' AND NOT s.paused AND s.attempts > 0 THEN 1 ELSE 0 END),
    SUM(CASE WHEN s.status = 'done' THEN 1 ELSE 0 END),
    0,
    MIN(CASE WHEN s.status = 'queued' AND NOT s.paused AND s.due_at <= ?1 THEN s.due_at END),
    SUM(CASE WHEN s.status = 'queued' AND s.paused THEN 1 ELSE 0 END),
    SUM(CASE WHEN s.status = 'suppressed' THEN 1 ELSE 0 END)
FROM (
    SELECT m.type_tag, m.status, m.attempts, m.due_at,
        m.status = 'queued' AND (px.type_tag IS NOT NULL OR pgr.name IS NOT NULL) AS paused
    FROM outbox_messages AS m
    LEFT JOIN outbox_paused AS px ON px.type_tag = m.type_tag
    LEFT JOIN outbox_groups AS pgr ON pgr.name = m.group_name AND pgr.paused_at IS NOT NULL
) AS s
GROUP BY s.type_tag
UNION ALL
SELECT type_tag, 0, 0, 0, 0, 0, COUNT(*), NULL, 0, 0 FROM outbox_dead_letters GROUP BY type_tag
