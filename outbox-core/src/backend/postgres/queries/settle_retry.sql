-- Puts failed messages back in the queue, due again at "due" (unix ms), with the error;
-- "give_back" 1 returns the attempt. Only while leased to $1 for the settled attempt.
-- $2 now (unix ms), $3 JSON [{"id","attempt","due","text","give_back"}]
UPDATE outbox_messages AS m
SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    due_at = r.due, last_error = r.text, attempts = m.attempts - r.give_back
FROM jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer, due bigint, text text, give_back integer)
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id')) AND m.id = r.id AND m.attempts = r.attempt AND m.lease_owner = $1 AND m.status = 'running'
