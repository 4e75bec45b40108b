-- A page of suppressions, newest first. ? address and ? its domain entry (both NULL: any),
-- ? reason (NULL: any), ? limit, ? offset
SELECT s.address, s.scope, s.reason, s.source, s.created_at, s.expires_at
FROM outbox_suppressions AS s CROSS JOIN (SELECT ? AS address, ? AS domain, ? AS reason) AS p
WHERE (p.address IS NULL OR s.address IN (p.address, p.domain)) AND (p.reason IS NULL OR s.reason = p.reason)
ORDER BY s.created_at DESC, s.address, s.scope
LIMIT ? OFFSET ?
