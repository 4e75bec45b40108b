-- Which of a batch's claims are still leased to the worker, locked until the transaction
-- ends (run only when some of the batch's settlements were fenced).
-- ? worker, ? JSON [{"id","claim"}]
SELECT m.id, m.claims
FROM outbox_messages AS m
JOIN (SELECT ? AS owner) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', claim INT PATH '$.claim')) AS r
    ON m.id = r.id AND m.claims = r.claim
WHERE m.lease_owner = p.owner AND m.status = 'running'
FOR UPDATE
