-- Inserts a batch of messages given as a JSON array; a taken idempotency key skips the row
-- without an error (the caller's transaction stays usable). No `RETURNING`: the row count
-- says whether all were written, and written_ids.sql tells which when some were not.
-- `jsonb_each` keeps each element binary, so `->>` reads it without re-parsing text; each
-- row is an array read by position (no key names to parse and compare).
-- A message with one recipient carries its suppression probe at positions 9 to 15 (address,
-- domain entry, four scopes, 1 when unsubscribes count); when a suppression in force stops
-- it, it is written as `suppressed` (never claimed), the suppression named. Its address
-- (already lowercased) is also its `recipient`; NULL for a row without one.
-- An ordering key, when there is one, is at position 16 (9 to 15 null without a probe).
-- ?1: [[id, type, payload (JSON as a string), due (unix ms, or null: delay ms after now), delay,
-- priority, max attempts, key, group (, address, domain, scope × 4, unsubscribes (, order key))]],
-- ?2 now (unix ms)
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key,
     enqueued_at, group_name, done_at, last_error, recipient, order_key)
SELECT
    value ->> 0, value ->> 1, CAST(value ->> 2 AS BLOB),
    CASE WHEN why IS NULL THEN 'queued' ELSE 'suppressed' END, 0,
    value ->> 6, MAX(COALESCE(value ->> 3, 0), ?2 + COALESCE(value ->> 4, 0)), value ->> 5, value ->> 7,
    ?2, value ->> 8, CASE WHEN why IS NULL THEN NULL ELSE ?2 END, why, value ->> 9, value ->> 16
FROM (
    SELECT j.value, CASE WHEN j.value ->> 9 IS NULL THEN NULL ELSE (
        SELECT 'suppressed: ' || s.reason || ' of ' || s.address || ' (' || s.scope || ')'
        FROM outbox_suppressions AS s
        WHERE s.address IN (j.value ->> 9, j.value ->> 10)
          AND +s.scope IN (j.value ->> 11, j.value ->> 12, j.value ->> 13, j.value ->> 14)
          AND (s.expires_at IS NULL OR s.expires_at > ?2)
          AND (j.value ->> 15 = 1 OR s.reason <> 'unsubscribe')
        ORDER BY s.scope, s.address
        LIMIT 1
    ) END AS why
    FROM jsonb_each(jsonb(?1)) AS j
)
WHERE true
ON CONFLICT (type_tag, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
