-- Which of the tokens of a kind were used before, locked until the transaction ends. ? kind,
-- ? JSON array of digests. STRAIGHT_JOIN keeps the JSON rows first, each looked up by the
-- primary key (left to itself, MariaDB read every token of the kind once per batch).
SELECT STRAIGHT_JOIN u.token
FROM (SELECT ? AS kind) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (token VARCHAR(100) PATH '$')) AS t
JOIN outbox_used_tokens AS u ON u.kind = p.kind AND u.token = t.token
ORDER BY u.token
FOR UPDATE
