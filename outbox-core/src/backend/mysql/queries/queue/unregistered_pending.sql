-- Queued messages per type for types not in the list. ? JSON array of type tags
SELECT type_tag, COUNT(*) FROM outbox_messages
WHERE status = 'queued'
  AND type_tag NOT IN (SELECT q FROM JSON_TABLE(?, '$[*]' COLUMNS (q VARCHAR(200) PATH '$')) AS t)
GROUP BY type_tag ORDER BY type_tag
