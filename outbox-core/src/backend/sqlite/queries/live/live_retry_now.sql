-- Makes up to ?9 matching queued messages due later than now due now, attempts kept (running
-- messages are left alone). ?1 now (unix ms), ?2 id, ?3 type, ?4 state
-- (pending|scheduled|running|retrying|paused), ?5 key prefix, ?6 error text, ?7 group, ?8 recipient, all
-- optional but now;
-- ?9 batch size
UPDATE outbox_messages SET due_at = ?1
WHERE id IN (
    SELECT m.id FROM outbox_messages AS m
    WHERE m.status = 'queued' AND m.due_at > ?1
  AND (?2 IS NULL OR m.id = ?2) AND (?3 IS NULL OR m.type_tag = ?3)
  AND (?4 IS NULL OR ?4 = CASE WHEN m.status = 'running' THEN 'running'
        WHEN EXISTS (SELECT 1 FROM outbox_paused AS x WHERE x.type_tag = m.type_tag)
          OR EXISTS (SELECT 1 FROM outbox_groups AS g WHERE g.name = m.group_name AND g.paused_at IS NOT NULL) THEN 'paused'
        WHEN m.attempts > 0 THEN 'retrying' WHEN m.due_at <= ?1 THEN 'pending' ELSE 'scheduled' END)
  AND (?5 IS NULL OR substr(m.idempotency_key, 1, length(?5)) = ?5)
  AND (?6 IS NULL OR instr(m.last_error, ?6) > 0)
  AND (?7 IS NULL OR m.group_name = ?7)
  AND (?8 IS NULL OR m.recipient = ?8)
    ORDER BY m.id
    LIMIT ?9
)
