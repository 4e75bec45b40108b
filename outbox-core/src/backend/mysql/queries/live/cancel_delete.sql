-- Deletes the queued messages of ? (JSON array of ids) that a cancel selected and locked in
-- this transaction (a join: see claim_mark.sql).
DELETE m FROM outbox_messages AS m
JOIN JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t ON m.id = t.i
WHERE m.status = 'queued'
