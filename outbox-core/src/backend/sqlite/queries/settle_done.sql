-- Keeps delivered messages as done rows (retention), with their note, while still leased
-- to ?1 for the settled attempt. ?2 now (unix ms), ?3 JSON [{"id","attempt","text"?}]
UPDATE outbox_messages
SET status = 'done', done_at = ?2, lease_owner = NULL, lease_expires_at = NULL,
    last_error = (SELECT j.value ->> 'text' FROM json_each(?3) AS j WHERE j.value ->> 'id' = outbox_messages.id)
WHERE id IN (SELECT j.value ->> 'id' FROM json_each(?3) AS j)
  AND lease_owner = ?1 AND status = 'running'
  AND attempts = (SELECT j.value ->> 'attempt' FROM json_each(?3) AS j WHERE j.value ->> 'id' = outbox_messages.id)
