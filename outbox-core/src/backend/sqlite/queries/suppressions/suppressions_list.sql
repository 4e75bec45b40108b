-- A page of suppressions, newest first. ?1 address and ?2 its domain entry (both NULL: any),
-- ?3 reason (NULL: any), ?4 limit, ?5 offset
SELECT address, scope, reason, source, created_at, expires_at FROM outbox_suppressions
WHERE (?1 IS NULL OR address IN (?1, ?2)) AND (?3 IS NULL OR reason = ?3)
ORDER BY created_at DESC, address, scope
LIMIT ?4 OFFSET ?5
