-- Which of a batch's ids were written (enqueue through another connection layer, which
-- reads one JSON text). ? JSON array of ids. Returns a JSON array of ids, or NULL.
SELECT CAST(JSON_ARRAYAGG(id) AS CHAR) AS j FROM outbox_messages
WHERE id IN (SELECT i FROM JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t)
