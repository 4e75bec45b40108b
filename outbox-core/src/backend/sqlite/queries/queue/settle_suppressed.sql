-- Keeps messages a suppression stopped before sending as `suppressed` rows, with the
-- suppression named, their attempt given back (nothing was tried). Only while leased to ?1
-- for the settled claim. ?2 now (unix ms), ?3 JSON [{"id","attempt","claim","text"}]
UPDATE outbox_messages
SET status = 'suppressed', attempts = attempts - 1, done_at = ?2, lease_owner = NULL,
    lease_expires_at = NULL, last_error = j.value ->> 'text'
FROM json_each(?3) AS j
WHERE outbox_messages.id = j.value ->> 'id' AND outbox_messages.claims = j.value ->> 'claim'
  AND outbox_messages.lease_owner = ?1 AND outbox_messages.status = 'running'
