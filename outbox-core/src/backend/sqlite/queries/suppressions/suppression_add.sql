-- Adds suppressions, each replacing the entry of the same address and scope, except that an
-- unsubscribe never replaces a hard bounce or a complaint (it would let transactional mail
-- through again). ?1 JSON
-- [{"address","scope","reason","source"?,"expires"? (unix ms)}] (one entry per address and
-- scope), ?2 now (unix ms)
INSERT INTO outbox_suppressions (address, scope, reason, source, created_at, expires_at)
SELECT value ->> 'address', value ->> 'scope', value ->> 'reason', value ->> 'source', ?2, value ->> 'expires'
FROM json_each(?1)
WHERE true
ON CONFLICT (address, scope) DO UPDATE SET
    reason = CASE WHEN outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND excluded.reason = 'unsubscribe' THEN outbox_suppressions.reason ELSE excluded.reason END,
    source = CASE WHEN outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND excluded.reason = 'unsubscribe' THEN outbox_suppressions.source ELSE excluded.source END,
    created_at = CASE WHEN outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND excluded.reason = 'unsubscribe' THEN outbox_suppressions.created_at ELSE excluded.created_at END,
    expires_at = CASE WHEN outbox_suppressions.reason IN ('hard_bounce', 'complaint') AND excluded.reason = 'unsubscribe' THEN outbox_suppressions.expires_at ELSE excluded.expires_at END
