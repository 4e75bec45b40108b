-- Copies given-up messages still leased to the worker for the settled claim into the
-- dead letters with their reason ("text"), which also ends their attempt log;
-- settle_delete.sql then removes them in the same transaction.
-- ? worker, ? now (unix ms; NULL: the database's clock), ? JSON [{"id","attempt","claim","text"}]
INSERT INTO outbox_dead_letters
    (id, type_tag, payload, attempts, max_attempts, priority, idempotency_key, last_error, enqueued_at, failed_at, attempt_log, claims, group_name, recipient, order_key)
SELECT m.id, m.type_tag, m.payload, m.attempts, m.max_attempts, m.priority, m.idempotency_key,
       r.reason, m.enqueued_at, p.now_ms,
       JSON_ARRAY_APPEND(
           CASE WHEN JSON_LENGTH(COALESCE(m.attempt_log, '[]')) >= 20
                THEN JSON_REMOVE(m.attempt_log, '$[0]') ELSE COALESCE(m.attempt_log, '[]') END,
           '$', JSON_OBJECT('attempt', m.attempts, 'at', p.now_ms, 'error', r.reason)),
       m.claims, m.group_name, m.recipient, m.order_key
FROM outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', claim INT PATH '$.claim', reason TEXT PATH '$.text')) AS r
    ON m.id = r.id AND m.claims = r.claim
WHERE m.lease_owner = p.owner AND m.status = 'running'
ON DUPLICATE KEY UPDATE
    attempts = VALUES(attempts), last_error = VALUES(last_error), failed_at = VALUES(failed_at),
    attempt_log = VALUES(attempt_log), claims = VALUES(claims), group_name = VALUES(group_name), recipient = VALUES(recipient), order_key = VALUES(order_key)
