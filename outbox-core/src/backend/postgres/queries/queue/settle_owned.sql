-- Which of a batch's claims are still leased to $1, locked until the transaction ends (run
-- only when some of the batch's settlements were fenced). $2 JSON [{"id","claim"}]
SELECT m.id, m.claims
FROM outbox_messages AS m
JOIN jsonb_to_recordset($2::jsonb) AS r(id text, claim integer) ON m.id = r.id AND m.claims = r.claim
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($2::jsonb) ->> 'id')) AND m.lease_owner = $1 AND m.status = 'running'
FOR UPDATE OF m
