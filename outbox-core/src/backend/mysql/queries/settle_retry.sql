-- Puts failed messages back in the queue, due again at "due" (unix ms), with the error;
-- "give_back" 1 returns the attempt. Only while leased to the worker for the settled
-- attempt. ? worker, ? now (unix ms), ? JSON [{"id","attempt","due","text","give_back"}]
UPDATE outbox_messages AS m
JOIN (SELECT ? AS owner, ? AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (
    id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', due BIGINT PATH '$.due',
    error TEXT PATH '$.text', give_back INT PATH '$.give_back'
)) AS r ON m.id = r.id AND m.attempts = r.attempt
SET m.due_at = r.due, m.last_error = r.error, m.attempts = m.attempts - r.give_back,
    m.status = 'queued', m.lease_owner = NULL, m.lease_expires_at = NULL
WHERE m.lease_owner = p.owner AND m.status = 'running'
