-- Disables an endpoint: ? reason, ? now (unix ms; NULL: the database's clock), ? kind,
-- ? name; a disabled one keeps its first time and takes the new reason.
UPDATE outbox_endpoints e, (SELECT ? AS reason, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS n) AS p SET
    e.disabled_at = COALESCE(e.disabled_at, p.n), e.disabled_reason = p.reason, e.updated_at = p.n
WHERE e.kind = ? AND e.name = ?
