-- Which of a batch's ids were written (after a batch insert skipped some taken keys).
-- ?1 JSON array of ids
SELECT id FROM outbox_messages WHERE id IN (SELECT value FROM json_each(?1))
