-- live_list.sql for a filter that names a recipient (required here): the same rows, found
-- through the recipient index instead of a scan of the queue.
-- A keyset page of live messages (queued and running rows), by id, each with its state at now
-- (as status_counts.sql defines them: a queued message of a paused type or group is paused)
-- and its group. ? now (unix ms; NULL: the database's clock), ? id, ? type, ? state
-- (pending|scheduled|running|retrying|paused), ? key prefix, ? error text, ? group, ? recipient, all
-- optional; ? after id (optional), ? with payload (1) or
-- not (0), ? limit
SELECT m.id, m.type_tag,
    CASE WHEN m.status = 'running' THEN 'running'
        WHEN EXISTS (SELECT 1 FROM outbox_paused AS x WHERE x.type_tag = m.type_tag)
          OR EXISTS (SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL) THEN 'paused'
        WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= p.now_ms THEN 'pending' ELSE 'scheduled' END,
    m.group_name,
    m.attempts, m.max_attempts, m.priority, m.due_at, m.enqueued_at, m.idempotency_key,
    m.last_error, m.attempt_log, m.lease_owner, m.lease_expires_at,
    CASE WHEN p.with_payload = 1 THEN m.payload END
FROM outbox_messages AS m
    CROSS JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, ? AS id, ? AS type_tag, ? AS state, ? AS key_prefix, ? AS error_text, ? AS group_name, ? AS recipient, ? AS after_id, ? AS with_payload) AS p
WHERE m.status IN ('queued', 'running')
  AND (p.id IS NULL OR m.id = p.id) AND (p.type_tag IS NULL OR m.type_tag = p.type_tag)
  AND (p.state IS NULL OR p.state = CASE WHEN m.status = 'running' THEN 'running'
        WHEN EXISTS (SELECT 1 FROM outbox_paused AS x WHERE x.type_tag = m.type_tag)
          OR EXISTS (SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL) THEN 'paused'
        WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= p.now_ms THEN 'pending' ELSE 'scheduled' END)
  AND (p.key_prefix IS NULL OR LEFT(m.idempotency_key, CHAR_LENGTH(p.key_prefix)) = p.key_prefix)
  AND (p.error_text IS NULL OR LOCATE(p.error_text, m.last_error) > 0)
  AND (p.group_name IS NULL OR m.group_name = p.group_name)
  AND m.recipient = p.recipient
  AND (p.after_id IS NULL OR m.id > p.after_id)
ORDER BY m.id
LIMIT ?
