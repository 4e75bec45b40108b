-- Which of a batch's ids were written (enqueue through another connection layer, which
-- reads one JSON text). ?1 JSON array of ids. Returns a JSON array of ids.
SELECT json_group_array(id) AS j FROM outbox_messages WHERE id IN (SELECT value FROM json_each(?1))
