-- Which of a batch's claims are still leased to ?1 (run only when some of the batch's
-- settlements were fenced; the write transaction's lock keeps them so until it ends).
-- ?2 JSON [{"id","claim"}]
SELECT m.id, m.claims
FROM outbox_messages AS m
WHERE (m.id, m.claims) IN (SELECT j.value ->> 'id', j.value ->> 'claim' FROM json_each(?2) AS j)
  AND m.lease_owner = ?1 AND m.status = 'running'
