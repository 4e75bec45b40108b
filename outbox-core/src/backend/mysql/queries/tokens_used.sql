-- Which of the tokens of a kind were used before, locked until the transaction ends. ? kind,
-- ? JSON array of digests
SELECT u.token
FROM (SELECT ? AS kind) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (token VARCHAR(100) PATH '$')) AS t
JOIN outbox_used_tokens AS u ON u.kind = p.kind AND u.token = t.token
ORDER BY u.token
FOR UPDATE
