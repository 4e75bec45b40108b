-- Makes up to ? matching queued messages due later than now due now, attempts kept (running
-- messages are left alone; a row claimed meanwhile is read again and skipped).
-- ? now (unix ms; NULL: the database's clock), ? id, ? type, ? state
-- (pending|scheduled|running|retrying|paused), ? key prefix, ? error text, ? group, ? recipient, all
-- optional; ? batch size
UPDATE outbox_messages AS u
JOIN (
    SELECT m.id, p.now_ms FROM outbox_messages AS m
    CROSS JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms, ? AS id, ? AS type_tag, ? AS state, ? AS key_prefix, ? AS error_text, ? AS group_name, ? AS recipient) AS p
    WHERE m.status = 'queued' AND m.due_at > p.now_ms
  AND (p.id IS NULL OR m.id = p.id) AND (p.type_tag IS NULL OR m.type_tag = p.type_tag)
  AND (p.state IS NULL OR p.state = CASE WHEN m.status = 'running' THEN 'running'
        WHEN EXISTS (SELECT 1 FROM outbox_paused AS x WHERE x.type_tag = m.type_tag)
          OR EXISTS (SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL) THEN 'paused'
        WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= p.now_ms THEN 'pending' ELSE 'scheduled' END)
  AND (p.key_prefix IS NULL OR LEFT(m.idempotency_key, CHAR_LENGTH(p.key_prefix)) = p.key_prefix)
  AND (p.error_text IS NULL OR LOCATE(p.error_text, m.last_error) > 0)
  AND (p.group_name IS NULL OR m.group_name = p.group_name)
  AND (p.recipient IS NULL OR m.recipient = p.recipient)
    ORDER BY m.id
    LIMIT ?
) AS b ON b.id = u.id
SET u.due_at = b.now_ms
WHERE u.status = 'queued' AND u.due_at > b.now_ms
