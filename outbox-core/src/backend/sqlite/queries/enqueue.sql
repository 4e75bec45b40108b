-- Inserts a batch of messages given as a JSON array; a taken idempotency key skips the row
-- without an error (the caller's transaction stays usable). No `RETURNING`: the row count
-- says whether all were written, and written_ids.sql tells which when some were not.
-- `jsonb_each` keeps each element binary, so `->>` reads it without re-parsing text.
-- ?1: [{"id","queue","job" (payload JSON as a string),"due","at","priority","max_attempts","key"}]
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at)
SELECT
    value ->> 'id', value ->> 'queue', CAST(value ->> 'job' AS BLOB), 'queued', 0,
    value ->> 'max_attempts', value ->> 'due', value ->> 'priority', value ->> 'key', value ->> 'at'
FROM jsonb_each(jsonb(?1))
WHERE true
ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
