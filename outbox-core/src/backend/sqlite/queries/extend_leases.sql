-- Extends the leases of the messages worker ?1 holds, each only for the claim it names, to ?3 ms after ?2 (now, unix ms).
-- ?4 JSON [{"id","claim"}]
UPDATE outbox_messages SET lease_expires_at = ?2 + ?3
WHERE (id, claims) IN (SELECT j.value ->> 'id', j.value ->> 'claim' FROM json_each(?4) AS j)
  AND lease_owner = ?1 AND status = 'running'
