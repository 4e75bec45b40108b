-- Deletes delivered messages still leased to the worker for the settled claim (fencing).
-- ? worker, ? now (unix ms; NULL: the database's clock), ? JSON [{"id","attempt","claim"}]
DELETE m FROM outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', claim INT PATH '$.claim')) AS r
    ON m.id = r.id AND m.claims = r.claim
WHERE m.lease_owner = p.owner AND m.status = 'running'
