-- Makes up to ?7 matching queued messages due later than now due now, attempts kept (running
-- messages are left alone). ?1 now (unix ms), ?2 id, ?3 type, ?4 state
-- (pending|scheduled|running|retrying), ?5 key prefix, ?6 error text, all optional but now; ?7
-- batch size
UPDATE outbox_messages SET due_at = ?1
WHERE id IN (
    SELECT m.id FROM outbox_messages AS m
    WHERE m.status = 'queued' AND m.due_at > ?1
      AND (?2 IS NULL OR m.id = ?2) AND (?3 IS NULL OR m.type_tag = ?3)
  AND (?4 IS NULL OR ?4 = CASE WHEN m.status = 'running' THEN 'running' WHEN m.attempts > 0 THEN 'retrying'
        WHEN m.due_at <= ?1 THEN 'pending' ELSE 'scheduled' END)
  AND (?5 IS NULL OR substr(m.idempotency_key, 1, length(?5)) = ?5)
  AND (?6 IS NULL OR instr(m.last_error, ?6) > 0)
    ORDER BY m.id
    LIMIT ?7
)
