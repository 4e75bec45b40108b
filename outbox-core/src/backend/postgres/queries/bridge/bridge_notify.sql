-- Wakes idle workers of type $1 at commit (after an INSERT … SELECT through another
-- connection layer wrote messages).
SELECT pg_notify('outbox_messages', $1)
