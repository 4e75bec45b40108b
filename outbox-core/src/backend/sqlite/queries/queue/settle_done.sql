-- Keeps delivered messages as done rows (retention), with their note, while still leased
-- to ?1 for the settled claim. ?2 now (unix ms), ?3 JSON [{"id","attempt","claim","text"?}]
UPDATE outbox_messages
SET status = 'done', done_at = ?2, lease_owner = NULL, lease_expires_at = NULL,
    last_error = j.value ->> 'text'
FROM json_each(?3) AS j
WHERE outbox_messages.id = j.value ->> 'id' AND outbox_messages.claims = j.value ->> 'claim'
  AND outbox_messages.lease_owner = ?1 AND outbox_messages.status = 'running'
