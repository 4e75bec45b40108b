-- The suppressions in force at $2 (now, unix ms; NULL: the database's clock) that stop the
-- probed messages, by probe. $1 JSON [{"i" (probe index),"a" (address),"d" (@domain),
-- "s0".."s3" (scopes),"u" (1: unsubscribes count)}]
SELECT r.i::bigint, s.address, s.scope, s.reason, s.source, s.created_at, s.expires_at
FROM jsonb_to_recordset($1::jsonb) AS r(i integer, a text, d text, s0 text, s1 text, s2 text, s3 text, u integer)
JOIN outbox_suppressions AS s ON s.address IN (r.a, r.d) AND s.scope IN (r.s0, r.s1, r.s2, r.s3)
WHERE (s.expires_at IS NULL OR s.expires_at > COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint))
  AND (r.u = 1 OR s.reason <> 'unsubscribe')
ORDER BY r.i, s.scope, s.address
