-- Where the messages of a settlement batch are now, read back after the commit of a try of
-- that batch went unanswered (its outcome unknown): id, claims, status and last error of
-- those still in the queue. ? JSON [{"id","claim"}]
SELECT m.id, m.claims, m.status, m.last_error
FROM outbox_messages AS m
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id')) AS r ON m.id = r.id
