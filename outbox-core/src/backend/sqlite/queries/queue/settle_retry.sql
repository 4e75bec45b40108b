-- Puts failed messages back in the queue, due again at "due" (unix ms; a time past means now) or
-- "delay" ms after now, with the error;
-- "give_back" 1 returns the attempt (a snooze or a deferral: not a failed attempt, not
-- logged), otherwise the attempt's error joins the attempt log (the last 20 kept). Only
-- while leased to ?1 for the settled claim.
-- ?2 now (unix ms), ?3 JSON [{"id","attempt","claim","due"?,"delay"?,"text","give_back"}]
UPDATE outbox_messages
SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    due_at = MAX(COALESCE(j.value ->> 'due', 0), ?2 + COALESCE(j.value ->> 'delay', 0)), last_error = j.value ->> 'text',
    attempts = attempts - (j.value ->> 'give_back'),
    attempt_log = CASE WHEN (j.value ->> 'give_back') = 1 THEN attempt_log ELSE json_insert(
        CASE WHEN json_array_length(COALESCE(attempt_log, '[]')) >= 20
             THEN json_remove(attempt_log, '$[0]') ELSE COALESCE(attempt_log, '[]') END,
        '$[#]', json_object('attempt', j.value ->> 'attempt', 'at', ?2, 'error', j.value ->> 'text')) END
FROM json_each(?3) AS j
WHERE outbox_messages.id = j.value ->> 'id' AND outbox_messages.claims = j.value ->> 'claim'
  AND outbox_messages.lease_owner = ?1 AND outbox_messages.status = 'running'
