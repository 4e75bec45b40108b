-- One group's progress now: its live messages per state (as live_list.sql defines them: a
-- queued message of a paused type or group is paused), its dead letters and what its row
-- records, through the group indexes; no row for a group nothing is known of. Columns as
-- groups_list.sql. ? now (unix ms; NULL: the database's clock), ? group
-- The last column counts suppressed messages: rows still kept plus those pruned into its row.
WITH p AS (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, CAST(? AS CHAR(200)) AS name),
live AS (
    SELECT s.name,
        CAST(SUM(s.state = 'pending') AS SIGNED) AS pending,
        CAST(SUM(s.state = 'scheduled') AS SIGNED) AS scheduled,
        CAST(SUM(s.state = 'running') AS SIGNED) AS running,
        CAST(SUM(s.state = 'retrying') AS SIGNED) AS retrying,
        CAST(SUM(s.state = 'paused') AS SIGNED) AS paused,
        CAST(SUM(s.state = 'suppressed') AS SIGNED) AS suppressed
    FROM (
        SELECT m.group_name AS name,
            CASE WHEN m.status = 'running' THEN 'running' WHEN m.status = 'suppressed' THEN 'suppressed'
            WHEN px.type_tag IS NOT NULL OR pgr.name IS NOT NULL THEN 'paused'
            WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= p.now_ms THEN 'pending' ELSE 'scheduled' END AS state
        FROM outbox_messages AS m CROSS JOIN p
        LEFT JOIN outbox_paused AS px ON px.type_tag = m.type_tag
        LEFT JOIN outbox_groups AS pgr ON pgr.name = m.group_name AND pgr.paused_at IS NOT NULL
        WHERE m.group_name = p.name AND m.status IN ('queued', 'running', 'suppressed')
    ) AS s
    GROUP BY s.name
),
dead AS (
    SELECT d.group_name AS name, COUNT(*) AS dead FROM outbox_dead_letters AS d CROSS JOIN p
    WHERE d.group_name = p.name GROUP BY d.group_name
),
names AS (
    SELECT name FROM live UNION SELECT name FROM dead
    UNION SELECT o.name FROM outbox_groups AS o CROSS JOIN p WHERE o.name = p.name
)
SELECT nm.name, COALESCE(l.pending, 0), COALESCE(l.scheduled, 0), COALESCE(l.running, 0),
    COALESCE(l.retrying, 0), COALESCE(l.paused, 0), COALESCE(d.dead, 0),
    COALESCE(g.delivered, 0), COALESCE(g.cancelled, 0), g.paused_at, g.pause_reason,
    g.first_delivered_at, g.last_delivered_at, g.window_at, COALESCE(g.window_delivered, 0),
    g.previous_rate, g.hook_type, g.completed_at, p.now_ms,
    COALESCE(l.suppressed, 0) + COALESCE(g.suppressed, 0)
FROM names AS nm
CROSS JOIN p
LEFT JOIN live AS l ON l.name = nm.name
LEFT JOIN dead AS d ON d.name = nm.name
LEFT JOIN outbox_groups AS g ON g.name = nm.name
ORDER BY nm.name
