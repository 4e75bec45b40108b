-- Deletes suppressed rows. ? JSON ["id"]
DELETE m FROM outbox_messages AS m
JOIN JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t ON m.id = t.i
WHERE m.status = 'suppressed'
