-- Deletes delivered messages still leased to $1 for the settled claim (fencing).
-- (Rows are reached through the primary key: `id = ANY(…)` keeps the plan an index scan
-- whatever the table statistics say; a join alone can degrade to a scan per JSON row.)
-- $2 now (unix ms; NULL: the database's clock), $3 JSON [{"id","attempt","claim"}]
DELETE FROM outbox_messages AS m
USING jsonb_to_recordset($3::jsonb) AS r(id text, attempt integer, claim integer)
WHERE m.id = ANY(ARRAY(SELECT jsonb_array_elements($3::jsonb) ->> 'id')) AND m.id = r.id AND m.claims = r.claim AND m.lease_owner = $1 AND m.status = 'running'
