-- Removes worker ?1 from the registry (a clean stop).
DELETE FROM outbox_workers WHERE name = ?1
