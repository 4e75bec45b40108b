-- Gives unstarted (or stopped-before-the-side-effect) messages back unchanged: queued,
-- same due time and place in line, attempt returned. Only while leased to $1 for the
-- settled claim. $2 now (unix ms; NULL: the database's clock), $3 JSON [{"id","attempt","claim"}]
UPDATE outbox_messages AS m
SET status = 'queued', attempts = m.attempts - 1, lease_owner = NULL, lease_expires_at = NULL
FROM jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer, claim integer)
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id')) AND m.id = r.id AND m.claims = r.claim AND m.lease_owner = $1 AND m.status = 'running'
