-- Keeps delivered messages as done rows (retention), with their note, while still leased
-- to the worker for the settled claim. ? worker, ? now (unix ms; NULL: the database's clock),
-- ? JSON [{"id","attempt","claim","text"?}]
UPDATE outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', claim INT PATH '$.claim', note TEXT PATH '$.text')) AS r
    ON m.id = r.id AND m.claims = r.claim
SET m.last_error = r.note, m.status = 'done', m.done_at = p.now_ms, m.lease_owner = NULL, m.lease_expires_at = NULL
WHERE m.lease_owner = p.owner AND m.status = 'running'
