-- Extends the leases of the messages a process's workers hold, each only while its worker
-- holds the claim it names, to its lease (ms) after ?1 (now, unix ms).
-- ?2 JSON [{"id","claim","owner","lease"}]
UPDATE outbox_messages SET lease_expires_at = ?1 + r.lease
FROM (
    SELECT j.value ->> 'id' AS id, j.value ->> 'claim' AS claim, j.value ->> 'owner' AS owner,
           j.value ->> 'lease' AS lease
    FROM json_each(?2) AS j
) AS r
WHERE outbox_messages.id = r.id AND outbox_messages.claims = r.claim
  AND outbox_messages.lease_owner = r.owner AND outbox_messages.status = 'running'
