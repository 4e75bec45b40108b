-- Every group's progress at ?1 (now, unix ms), by name: its live messages per state (as
-- live_list.sql defines them), its dead letters, and what its row records (delivered and
-- cancelled counts, pause, rate window, completion hook), then ?1 again (the rate's "now").
-- Every group with a live message, a dead letter or a row is listed.
-- The last column counts suppressed messages: rows still kept plus those pruned into its row.
WITH live AS (
    SELECT s.name,
        COUNT(CASE WHEN s.state = 'pending' THEN 1 END) AS pending,
        COUNT(CASE WHEN s.state = 'scheduled' THEN 1 END) AS scheduled,
        COUNT(CASE WHEN s.state = 'running' THEN 1 END) AS running,
        COUNT(CASE WHEN s.state = 'retrying' THEN 1 END) AS retrying,
        COUNT(CASE WHEN s.state = 'paused' THEN 1 END) AS paused,
        COUNT(CASE WHEN s.state = 'suppressed' THEN 1 END) AS suppressed
    FROM (
        SELECT m.group_name AS name,
            CASE WHEN m.status = 'running' THEN 'running' WHEN m.status = 'suppressed' THEN 'suppressed'
            WHEN px.type_tag IS NOT NULL OR pgr.name IS NOT NULL THEN 'paused'
            WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= ?1 THEN 'pending' ELSE 'scheduled' END AS state
        FROM outbox_messages AS m
        LEFT JOIN outbox_paused AS px ON px.type_tag = m.type_tag
        LEFT JOIN outbox_groups AS pgr ON pgr.name = m.group_name AND pgr.paused_at IS NOT NULL
        WHERE m.group_name IS NOT NULL AND m.status IN ('queued', 'running', 'suppressed')
    ) AS s
    GROUP BY s.name
),
dead AS (
    SELECT group_name AS name, COUNT(*) AS dead FROM outbox_dead_letters
    WHERE group_name IS NOT NULL GROUP BY group_name
),
names AS (
    SELECT name FROM live UNION SELECT name FROM dead
    UNION SELECT name FROM outbox_groups WHERE true
)
SELECT n.name, COALESCE(l.pending, 0), COALESCE(l.scheduled, 0), COALESCE(l.running, 0),
    COALESCE(l.retrying, 0), COALESCE(l.paused, 0), COALESCE(d.dead, 0),
    COALESCE(g.delivered, 0), COALESCE(g.cancelled, 0), g.paused_at, g.pause_reason,
    g.first_delivered_at, g.last_delivered_at, g.window_at, COALESCE(g.window_delivered, 0),
    g.previous_rate, g.hook_type, g.completed_at, ?1,
    COALESCE(l.suppressed, 0) + COALESCE(g.suppressed, 0)
FROM names AS n
LEFT JOIN live AS l ON l.name = n.name
LEFT JOIN dead AS d ON d.name = n.name
LEFT JOIN outbox_groups AS g ON g.name = n.name
ORDER BY n.name
