-- Entries whose address holds a non-ASCII character (written before addresses were
-- normalized: they may need it), after ?1 address, ?2 scope, in key order; at most ?3.
SELECT address, scope, reason, source, created_at, expires_at FROM outbox_suppressions
WHERE length(CAST(address AS BLOB)) <> length(address) AND (address, scope) > (?1, ?2)
ORDER BY address, scope
LIMIT ?3
