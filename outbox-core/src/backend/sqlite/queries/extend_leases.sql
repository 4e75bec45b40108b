-- Extends the leases of the messages worker ?1 holds to ?2 (unix ms). ?3 JSON [{"id","attempt"}]
UPDATE outbox_messages SET lease_expires_at = ?2
WHERE id IN (SELECT j.value ->> 'id' FROM json_each(?3) AS j)
  AND lease_owner = ?1 AND status = 'running'
