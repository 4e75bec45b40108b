-- Forgets an endpoint: ? kind, ? name.
DELETE FROM outbox_endpoints WHERE kind = ? AND name = ?
