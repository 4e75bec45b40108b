-- Inserts a batch of messages given as a JSON array; a taken idempotency key skips the row
-- without an error (the caller's transaction stays usable). No `RETURNING`: the row count
-- says whether all were written, and written_ids.sql tells which when some were not.
-- `jsonb_each` keeps each element binary, so `->>` reads it without re-parsing text; each
-- row is an array read by position (no key names to parse and compare).
-- ?1: [[id, type, payload (JSON as a string), due (unix ms, or null: delay ms after now), delay,
-- priority, max attempts, key, group]], ?2 now (unix ms)
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key, enqueued_at, group_name)
SELECT
    value ->> 0, value ->> 1, CAST(value ->> 2 AS BLOB), 'queued', 0,
    value ->> 6, MAX(COALESCE(value ->> 3, 0), ?2 + COALESCE(value ->> 4, 0)), value ->> 5, value ->> 7, ?2, value ->> 8
FROM jsonb_each(jsonb(?1))
WHERE true
ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
