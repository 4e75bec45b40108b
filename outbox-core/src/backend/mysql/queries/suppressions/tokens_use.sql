-- Records the use of tokens; those used before are left as they are. ? kind, ? JSON array
-- of digests, ? now (unix ms; NULL: the database's clock)
INSERT IGNORE INTO outbox_used_tokens (kind, token, used_at)
SELECT p.kind, t.token, n.now_ms
FROM (SELECT ? AS kind) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (token VARCHAR(100) PATH '$')) AS t
JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS n
ORDER BY t.token
