-- Adds suppressions, each replacing the entry of the same address and scope, except that an
-- unsubscribe never replaces a hard bounce or a complaint (it would let transactional mail
-- through again). $1 JSON
-- [{"address","scope","reason","source"?,"expires"? (unix ms)}] (one entry per address and
-- scope), $2 now (unix ms; NULL: the database's clock)
INSERT INTO outbox_suppressions AS s (address, scope, reason, source, created_at, expires_at)
SELECT r.address, r.scope, r.reason, r.source, (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)), r.expires
FROM jsonb_to_recordset($1::jsonb) AS r(address text, scope text, reason text, source text, expires bigint)
ORDER BY 1, 2
ON CONFLICT (address, scope) DO UPDATE SET
    reason = CASE WHEN s.reason IN ('hard_bounce', 'complaint') AND EXCLUDED.reason = 'unsubscribe' THEN s.reason ELSE EXCLUDED.reason END,
    source = CASE WHEN s.reason IN ('hard_bounce', 'complaint') AND EXCLUDED.reason = 'unsubscribe' THEN s.source ELSE EXCLUDED.source END,
    created_at = CASE WHEN s.reason IN ('hard_bounce', 'complaint') AND EXCLUDED.reason = 'unsubscribe' THEN s.created_at ELSE EXCLUDED.created_at END,
    expires_at = CASE WHEN s.reason IN ('hard_bounce', 'complaint') AND EXCLUDED.reason = 'unsubscribe' THEN s.expires_at ELSE EXCLUDED.expires_at END
