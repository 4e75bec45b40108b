-- Moves the selected messages to running, leased to ? for ? ms after ? (now, unix ms; NULL: the
-- database's clock: ? worker, ? now, ? lease ms), counting the
-- attempt and the claim (the fencing token its settlement names; never given back).
-- ? JSON array of ids (a join: MariaDB runs `IN (SELECT … FROM JSON_TABLE …)` in an UPDATE
-- as a dependent subquery over the whole table)
UPDATE outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) + ? AS until_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t ON m.id = t.i
SET m.status = 'running', m.attempts = m.attempts + 1, m.claims = m.claims + 1, m.lease_owner = p.owner, m.lease_expires_at = p.until_ms
