-- Removes a worker from the registry (a clean stop). ? name
DELETE FROM outbox_workers WHERE name = ?
