-- Entries whose address holds a non-ASCII character (written before addresses were
-- normalized: they may need it), after an address and scope, in key order. ? address,
-- ? scope, ? limit
SELECT address, scope, reason, source, created_at, expires_at FROM outbox_suppressions
WHERE LENGTH(address) <> CHAR_LENGTH(address) AND (address, scope) > (?, ?)
ORDER BY address, scope
LIMIT ?
