-- Deletes delivered messages still leased to ?1 for the settled attempt (fencing).
-- ?2 now (unix ms), ?3 JSON [{"id","attempt"}]
DELETE FROM outbox_messages
WHERE id IN (SELECT j.value ->> 'id' FROM json_each(?3) AS j)
  AND lease_owner = ?1 AND status = 'running'
  AND attempts = (SELECT j.value ->> 'attempt' FROM json_each(?3) AS j WHERE j.value ->> 'id' = outbox_messages.id)
