-- Gives unstarted (or stopped-before-the-side-effect) messages back unchanged: queued,
-- same due time and place in line, attempt returned. Only while leased to the worker for
-- the settled claim. ? worker, ? now (unix ms; NULL: the database's clock), ? JSON [{"id","attempt","claim"}]
UPDATE outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', claim INT PATH '$.claim')) AS r
    ON m.id = r.id AND m.claims = r.claim
SET m.attempts = m.attempts - 1, m.status = 'queued', m.lease_owner = NULL, m.lease_expires_at = NULL
WHERE m.lease_owner = p.owner AND m.status = 'running'
