-- Removes the queued messages of types not in ?1 (JSON array) just copied to the dead letters.
DELETE FROM outbox_messages
WHERE status = 'queued' AND type_tag NOT IN (SELECT value FROM json_each(?1))
