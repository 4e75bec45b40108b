-- Keeps delivered messages as done rows (retention), with their note, while still leased
-- to $1 for the settled claim. $2 now (unix ms; NULL: the database's clock), $3 JSON [{"id","attempt","claim","text"?}]
UPDATE outbox_messages AS m
SET status = 'done', done_at = (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)), lease_owner = NULL, lease_expires_at = NULL, last_error = r.text
FROM jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer, claim integer, text text)
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id')) AND m.id = r.id AND m.claims = r.claim AND m.lease_owner = $1 AND m.status = 'running'
