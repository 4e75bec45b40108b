-- Deletes delivered messages still leased to the worker for the settled attempt (fencing).
-- ? worker, ? now (unix ms), ? JSON [{"id","attempt"}]
DELETE m FROM outbox_messages AS m
JOIN (SELECT ? AS owner, ? AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt')) AS r
    ON m.id = r.id AND m.attempts = r.attempt
WHERE m.lease_owner = p.owner AND m.status = 'running'
