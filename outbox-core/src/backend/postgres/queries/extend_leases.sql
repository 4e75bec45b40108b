-- Extends the leases of the messages worker $1 holds to $2 (unix ms). $3 JSON [{"id","attempt"}]
UPDATE outbox_messages AS m SET lease_expires_at = $2
FROM jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer)
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id')) AND m.id = r.id AND m.lease_owner = $1 AND m.status = 'running'
