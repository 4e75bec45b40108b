-- The suppressions in force at ?2 (now, unix ms) that stop the probed messages, by probe.
-- ?1 JSON [{"i" (probe index),"a" (address),"d" (@domain),"s0".."s3" (scopes),"u" (1:
-- unsubscribes count)}]
SELECT j.value ->> 'i', s.address, s.scope, s.reason, s.source, s.created_at, s.expires_at
FROM json_each(?1) AS j
JOIN outbox_suppressions AS s
    ON s.address IN (j.value ->> 'a', j.value ->> 'd')
   AND s.scope IN (j.value ->> 's0', j.value ->> 's1', j.value ->> 's2', j.value ->> 's3')
WHERE (s.expires_at IS NULL OR s.expires_at > ?2) AND (j.value ->> 'u' = 1 OR s.reason <> 'unsubscribe')
ORDER BY 1, s.scope, s.address
