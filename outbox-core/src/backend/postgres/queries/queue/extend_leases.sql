-- Extends the leases of the messages a process's workers hold, each only while its worker
-- holds the claim it names, to its lease (ms) after $1 (now, unix ms; NULL: the database's
-- clock). $2 JSON [{"id","claim","owner","lease"}]
-- A row another transaction has locked is skipped, never waited for: that is this
-- process's own settlement of it (the worker let go of it before writing) or a takeover.
-- Waiting would deadlock with a settlement that locks the same rows in another order, and
-- PostgreSQL finds a deadlock only after `deadlock_timeout` (1 s), stalling both.
UPDATE outbox_messages AS m SET lease_expires_at = (SELECT COALESCE($1::bigint, (extract(epoch FROM now()) * 1000)::bigint)) + r.lease
FROM jsonb_to_recordset($2::jsonb) AS r(id text, claim integer, owner text, lease bigint)
WHERE m.id IN (
        SELECT id FROM outbox_messages
        WHERE id = ANY(ARRAY(SELECT jsonb_array_elements($2::jsonb) ->> 'id')) AND status = 'running'
        FOR UPDATE SKIP LOCKED
    )
  AND m.id = r.id AND m.claims = r.claim AND m.lease_owner = r.owner AND m.status = 'running'
