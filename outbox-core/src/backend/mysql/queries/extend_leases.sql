-- Extends the leases of the messages a worker holds, each only for the claim it names. ? worker, ? now (unix ms; NULL:
-- the database's clock), ? lease (ms), ? JSON [{"id","claim"}]
UPDATE outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) + ? AS until_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', claim INT PATH '$.claim')) AS r
    ON m.id = r.id AND m.claims = r.claim
SET m.lease_expires_at = p.until_ms
WHERE m.lease_owner = p.owner AND m.status = 'running'
