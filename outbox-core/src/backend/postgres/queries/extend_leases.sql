-- Extends the leases of the messages worker $1 holds, each only for the claim it names, to $3 ms after $2 (now, unix ms; NULL:
-- the database's clock). $4 JSON [{"id","claim"}]
UPDATE outbox_messages AS m SET lease_expires_at = (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)) + $3
FROM jsonb_to_recordset($4::jsonb) AS r(id text, claim integer)
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($4::jsonb) ->> 'id')) AND m.id = r.id AND m.claims = r.claim AND m.lease_owner = $1 AND m.status = 'running'
