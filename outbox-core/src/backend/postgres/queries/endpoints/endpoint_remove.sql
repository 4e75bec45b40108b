-- Forgets endpoint $2 of kind $1.
DELETE FROM outbox_endpoints WHERE kind = $1 AND name = $2
