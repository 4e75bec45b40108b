-- Extends the leases of the messages a process's workers hold, each only while its worker
-- holds the claim it names, to its lease (ms) after now. ? now (unix ms; NULL: the
-- database's clock), ? JSON [{"id","claim","owner","lease"}]
UPDATE outbox_messages AS m
JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', claim INT PATH '$.claim',
        owner VARCHAR(255) PATH '$.owner', lease BIGINT PATH '$.lease')) AS r
    ON m.id = r.id AND m.claims = r.claim
SET m.lease_expires_at = p.now_ms + r.lease
WHERE m.lease_owner = r.owner AND m.status = 'running'
