-- Adds suppressions, each replacing the entry of the same address and scope, except that an
-- unsubscribe never replaces a hard bounce or a complaint (it would let transactional mail
-- through again). ? JSON
-- [{"address","scope","reason","source"?,"expires"? (unix ms)}] (one entry per address and
-- scope), ? now (unix ms; NULL: the database's clock)
INSERT INTO outbox_suppressions (address, scope, reason, source, created_at, expires_at)
SELECT r.address, r.scope, r.reason, r.source, p.now_ms, r.expires
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    address VARCHAR(255) PATH '$.address',
    scope VARCHAR(210) PATH '$.scope',
    reason VARCHAR(20) PATH '$.reason',
    source VARCHAR(255) PATH '$.source',
    expires BIGINT PATH '$.expires'
)) AS r, (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
ORDER BY r.address, r.scope
ON DUPLICATE KEY UPDATE
    source = IF(outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND VALUES(reason) = 'unsubscribe', outbox_suppressions.source, VALUES(source)),
    created_at = IF(outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND VALUES(reason) = 'unsubscribe', outbox_suppressions.created_at, VALUES(created_at)),
    expires_at = IF(outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND VALUES(reason) = 'unsubscribe', outbox_suppressions.expires_at, VALUES(expires_at)),
    reason = IF(outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND VALUES(reason) = 'unsubscribe', outbox_suppressions.reason, VALUES(reason))
