-- Deletes delivered messages still leased to ?1 for the settled claim (fencing).
-- ?2 now (unix ms), ?3 JSON [{"id","attempt","claim"}]. (A row-value IN: the JSON is read once into
-- a temporary index and each row is found by its primary key.)
DELETE FROM outbox_messages
WHERE (id, claims) IN (SELECT j.value ->> 'id', j.value ->> 'claim' FROM json_each(?3) AS j)
  AND lease_owner = ?1 AND status = 'running'
