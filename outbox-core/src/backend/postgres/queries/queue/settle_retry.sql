-- Puts failed messages back in the queue, due again at "due" (unix ms; a time past means now) or
-- "delay" ms after now, with the error;
-- "give_back" 1 returns the attempt (a snooze or a deferral: not a failed attempt, not
-- logged), otherwise the attempt's error joins the attempt log (the last 20 kept). Only
-- while leased to $1 for the settled claim.
-- $2 now (unix ms; NULL: the database's clock), $3 JSON [{"id","attempt","claim","due"?,"delay"?,"text","give_back"}]
UPDATE outbox_messages AS m
SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    due_at = GREATEST(COALESCE(r.due, 0), (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)) + COALESCE(r.delay, 0)), last_error = r.text, attempts = m.attempts - r.give_back,
    attempt_log = CASE WHEN r.give_back = 1 THEN m.attempt_log ELSE (
        (CASE WHEN jsonb_array_length(COALESCE(m.attempt_log, '[]')::jsonb) >= 20
              THEN COALESCE(m.attempt_log, '[]')::jsonb - 0 ELSE COALESCE(m.attempt_log, '[]')::jsonb END)
        || jsonb_build_array(jsonb_build_object('attempt', r.attempt, 'at', (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)), 'error', r.text))
    )::text END
FROM jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer, claim integer, due bigint, delay bigint, text text, give_back integer)
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id')) AND m.id = r.id AND m.claims = r.claim AND m.lease_owner = $1 AND m.status = 'running'
