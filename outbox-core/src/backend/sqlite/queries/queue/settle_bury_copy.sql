-- Copies given-up messages still leased to ?1 for the settled claim into the dead
-- letters, with the reason ("text"), which also ends their attempt log; settle_delete.sql
-- then removes them, in the same transaction. ?2 now (unix ms), ?3 JSON [{"id","attempt","claim","text"}]
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at, attempt_log, claims, group_name, recipient, order_key)
SELECT m.id, m.type_tag, m.payload, m.attempts, m.max_attempts, m.priority, m.idempotency_key,
       j.value ->> 'text', m.enqueued_at, ?2,
       json_insert(
           CASE WHEN json_array_length(COALESCE(m.attempt_log, '[]')) >= 20
                THEN json_remove(m.attempt_log, '$[0]') ELSE COALESCE(m.attempt_log, '[]') END,
           '$[#]', json_object('attempt', m.attempts, 'at', ?2, 'error', j.value ->> 'text')),
       m.claims, m.group_name, m.recipient, m.order_key
FROM json_each(?3) AS j
JOIN outbox_messages AS m ON m.id = j.value ->> 'id' AND m.claims = j.value ->> 'claim'
WHERE m.lease_owner = ?1 AND m.status = 'running'
ON CONFLICT (id) DO UPDATE SET
    attempts = excluded.attempts, last_error = excluded.last_error, failed_at = excluded.failed_at,
    attempt_log = excluded.attempt_log, claims = excluded.claims, group_name = excluded.group_name, recipient = excluded.recipient, order_key = excluded.order_key
