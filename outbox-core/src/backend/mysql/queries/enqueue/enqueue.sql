-- Inserts a batch of messages given as a JSON array. A taken idempotency key turns the row
-- into a no-op update (not INSERT IGNORE, which would also hide other errors); the caller
-- then reads the key holders back. A message with one recipient carries its suppression
-- probe ("a" address, "d" domain entry, "s0".."s3" scopes, "u" 1 when unsubscribes count);
-- when a suppression in force stops it, it is written as `suppressed` (never claimed), the
-- suppression named; its address (already lowercased) is also its `recipient` (NULL for a
-- row without one). (Its expiry is read at the database's clock: MariaDB fails the second
-- run of a prepared statement whose correlated subquery reads the derived `p`.)
-- ?: [{"id","queue","job","due" (unix ms, or null: "delay" ms after now),"delay","priority",
-- "max_attempts","key","group","a","d","s0".."s3","u","o" (the ordering key)}], ? now (unix ms;
-- NULL: the database's clock)
INSERT INTO outbox_messages
    (id, type_tag, payload, status, attempts, max_attempts, due_at, priority, idempotency_key,
     enqueued_at, group_name, done_at, last_error, recipient, order_key)
SELECT x.id, x.queue, CAST(x.job AS BINARY), CASE WHEN x.why IS NULL THEN 'queued' ELSE 'suppressed' END, 0,
    x.max_attempts, GREATEST(COALESCE(x.due, 0), x.now_ms + COALESCE(x.delay, 0)), x.priority, x.idem_key,
    x.now_ms, x.group_name, CASE WHEN x.why IS NULL THEN NULL ELSE x.now_ms END, x.why, x.a, x.o
FROM (
    SELECT r.id, r.queue, r.job, r.due, r.delay, r.priority, r.max_attempts, r.idem_key, r.group_name,
        r.a, r.o, p.now_ms, CASE WHEN r.a IS NULL THEN NULL ELSE (
            SELECT CONCAT('suppressed: ', s.reason, ' of ', s.address, ' (', s.scope, ')')
            FROM outbox_suppressions AS s
            WHERE s.address IN (r.a, r.d) AND s.scope IN (r.s0, r.s1, r.s2, r.s3)
              AND (s.expires_at IS NULL OR s.expires_at > CAST(@@timestamp * 1000 AS SIGNED)) AND (r.u = 1 OR s.reason <> 'unsubscribe')
            ORDER BY s.scope, s.address
            LIMIT 1
        ) END AS why
    FROM JSON_TABLE(?, '$[*]' COLUMNS (
        id VARCHAR(36) PATH '$.id',
        queue VARCHAR(200) PATH '$.queue',
        job LONGTEXT PATH '$.job',
        due BIGINT PATH '$.due',
        delay BIGINT PATH '$.delay',
        priority INT PATH '$.priority',
        max_attempts INT PATH '$.max_attempts',
        idem_key VARCHAR(255) PATH '$.key',
        group_name VARCHAR(200) PATH '$.group',
        a VARCHAR(255) PATH '$.a',
        d VARCHAR(255) PATH '$.d',
        s0 VARCHAR(210) PATH '$.s0',
        s1 VARCHAR(210) PATH '$.s1',
        s2 VARCHAR(210) PATH '$.s2',
        s3 VARCHAR(210) PATH '$.s3',
        u INT PATH '$.u',
        o VARCHAR(255) PATH '$.o'
    )) AS r, (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
) AS x
ON DUPLICATE KEY UPDATE outbox_messages.id = outbox_messages.id
