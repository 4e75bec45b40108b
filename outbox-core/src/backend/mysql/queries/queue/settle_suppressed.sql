-- Keeps messages a suppression stopped before sending as `suppressed` rows, with the
-- suppression named, their attempt given back (nothing was tried). Only while leased to the
-- worker for the settled claim. ? worker, ? now (unix ms; NULL: the database's clock),
-- ? JSON [{"id","attempt","claim","text"}]
UPDATE outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', claim INT PATH '$.claim', note TEXT PATH '$.text')) AS r
    ON m.id = r.id AND m.claims = r.claim
SET m.last_error = r.note, m.attempts = m.attempts - 1, m.status = 'suppressed', m.done_at = p.now_ms, m.lease_owner = NULL, m.lease_expires_at = NULL
WHERE m.lease_owner = p.owner AND m.status = 'running'
