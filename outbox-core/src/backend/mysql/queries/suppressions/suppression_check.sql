-- The suppressions in force now that stop the probed messages, by probe. ? JSON [{"i"
-- (probe index),"a" (address),"d" (@domain),"s0".."s3" (scopes),"u" (1: unsubscribes
-- count)}], ? now (unix ms; NULL: the database's clock)
SELECT r.i, s.address, s.scope, s.reason, s.source, s.created_at, s.expires_at
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    i INT PATH '$.i', a VARCHAR(255) PATH '$.a', d VARCHAR(255) PATH '$.d',
    s0 VARCHAR(210) PATH '$.s0', s1 VARCHAR(210) PATH '$.s1', s2 VARCHAR(210) PATH '$.s2',
    s3 VARCHAR(210) PATH '$.s3', u INT PATH '$.u'
)) AS r
CROSS JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN outbox_suppressions AS s ON s.address IN (r.a, r.d) AND s.scope IN (r.s0, r.s1, r.s2, r.s3)
WHERE (s.expires_at IS NULL OR s.expires_at > p.now_ms) AND (r.u = 1 OR s.reason <> 'unsubscribe')
ORDER BY r.i, s.scope, s.address
