-- live_list.sql for a filter that names a recipient (required here): the same rows, found
-- through the recipient index instead of a scan of the queue.
-- A keyset page of live messages (queued and running rows), by id, each with its state at now
-- (as status_counts.sql defines them: a queued message of a paused type or group is paused)
-- and its group. $1 now (unix ms; NULL: the database's clock), $2 id, $3 type, $4 state
-- (pending|scheduled|running|retrying|paused), $5 key prefix, $6 error text, $7 group, $8 recipient, all
-- optional; $9 after id (optional), $10 with payload (1) or
-- not (0), $11 limit
SELECT m.id, m.type_tag,
    CASE WHEN m.status = 'running' THEN 'running'
        WHEN EXISTS (SELECT 1 FROM outbox_paused AS x WHERE x.type_tag = m.type_tag)
          OR EXISTS (SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL) THEN 'paused'
        WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= n.now THEN 'pending' ELSE 'scheduled' END,
    m.group_name,
    m.attempts, m.max_attempts, m.priority, m.due_at, m.enqueued_at, m.idempotency_key,
    m.last_error, m.attempt_log, m.lease_owner, m.lease_expires_at,
    CASE WHEN $10::bigint = 1 THEN m.payload END
FROM outbox_messages AS m
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
  AND ($9::text IS NULL OR m.id > $9)
ORDER BY m.id
LIMIT $11
