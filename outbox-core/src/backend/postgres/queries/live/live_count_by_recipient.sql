-- live_count.sql for a filter that names a recipient (required here): the same rows, found
-- through the recipient index instead of a scan of the queue.
-- How many live messages match. $1 now (unix ms; NULL: the database's clock), $2 id, $3 type, $4 state
-- (pending|scheduled|running|retrying|paused), $5 key prefix, $6 error text, $7 group, $8 recipient, all
-- optional
SELECT COUNT(*) FROM outbox_messages AS m
    CROSS JOIN (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint) AS now) AS n
WHERE m.status IN ('queued', 'running')
  AND ($2::text IS NULL OR m.id = $2) AND ($3::text IS NULL OR m.type_tag = $3)
  AND ($4::text IS NULL OR $4 = CASE WHEN m.status = 'running' THEN 'running'
        WHEN EXISTS (SELECT 1 FROM outbox_paused AS x WHERE x.type_tag = m.type_tag)
          OR EXISTS (SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL) THEN 'paused'
        WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= n.now THEN 'pending' ELSE 'scheduled' END)
  AND ($5::text IS NULL OR left(m.idempotency_key, length($5)) = $5)
  AND ($6::text IS NULL OR strpos(m.last_error, $6) > 0)
  AND ($7::text IS NULL OR m.group_name = $7)
  AND m.recipient = $8
