-- Writes one entry as it was (its own created_at) unless an entry of the same address and
-- scope exists. ? address, ? scope, ? reason, ? source, ? created at, ? expires at
INSERT IGNORE INTO outbox_suppressions (address, scope, reason, source, created_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?)
