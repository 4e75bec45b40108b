-- Writes one entry as it was (its own created_at) unless an entry of the same address and
-- scope exists. ?1 address, ?2 scope, ?3 reason, ?4 source, ?5 created at, ?6 expires at
INSERT INTO outbox_suppressions (address, scope, reason, source, created_at, expires_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (address, scope) DO NOTHING
