-- Gives unstarted (or stopped-before-the-side-effect) messages back unchanged: queued,
-- same due time and place in line, attempt returned. Only while leased to ?1 for the
-- settled claim. ?2 now (unix ms), ?3 JSON [{"id","attempt","claim"}]
UPDATE outbox_messages
SET status = 'queued', attempts = attempts - 1, lease_owner = NULL, lease_expires_at = NULL
WHERE (id, claims) IN (SELECT j.value ->> 'id', j.value ->> 'claim' FROM json_each(?3) AS j)
  AND lease_owner = ?1 AND status = 'running'
