-- Adds cancelled messages to their groups' counts (in name order, so concurrent writers
-- lock group rows in one order). ? JSON [["group", count]]
INSERT INTO outbox_groups (name, cancelled)
SELECT r.name, r.n FROM JSON_TABLE(?, '$[*]' COLUMNS (name VARCHAR(200) PATH '$[0]', n BIGINT PATH '$[1]')) AS r
ORDER BY r.name
ON DUPLICATE KEY UPDATE cancelled = outbox_groups.cancelled + VALUES(cancelled)
