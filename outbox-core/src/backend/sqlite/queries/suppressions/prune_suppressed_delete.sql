-- Deletes suppressed rows. ?1 JSON ["id"]
DELETE FROM outbox_messages
WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'suppressed'
