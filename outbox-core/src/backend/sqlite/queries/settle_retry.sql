-- Puts failed messages back in the queue, due again at "due" (unix ms), with the error;
-- "give_back" 1 returns the attempt. Only while leased to ?1 for the settled attempt.
-- ?2 now (unix ms), ?3 JSON [{"id","attempt","due","text","give_back"}]
UPDATE outbox_messages
SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    due_at = j.value ->> 'due', last_error = j.value ->> 'text',
    attempts = attempts - (j.value ->> 'give_back')
FROM json_each(?3) AS j
WHERE outbox_messages.id = j.value ->> 'id' AND outbox_messages.attempts = j.value ->> 'attempt'
  AND outbox_messages.lease_owner = ?1 AND outbox_messages.status = 'running'
