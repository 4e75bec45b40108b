-- Puts running messages of the given types whose lease expired back in the queue, keeping their due
-- time (their place in line); the attempt stays counted and its end joins the attempt log
-- (the last 20 kept). ? JSON array of tags, ? now (unix ms; NULL: the database's clock)
UPDATE outbox_messages AS m
JOIN JSON_TABLE(?, '$[*]' COLUMNS (tag VARCHAR(200) PATH '$')) AS t ON m.type_tag = t.tag
JOIN (SELECT COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
SET m.attempt_log = JSON_ARRAY_APPEND(
        CASE WHEN JSON_LENGTH(COALESCE(m.attempt_log, '[]')) >= 20
             THEN JSON_REMOVE(m.attempt_log, '$[0]') ELSE COALESCE(m.attempt_log, '[]') END,
        '$', JSON_OBJECT('attempt', m.attempts, 'at', p.now_ms, 'error',
            CONCAT('the worker holding attempt ', m.attempts, ' stopped renewing its lease (crash or stall)'))),
    m.last_error = CONCAT('the worker holding attempt ', m.attempts, ' stopped renewing its lease (crash or stall)'),
    m.status = 'queued', m.lease_owner = NULL, m.lease_expires_at = NULL
WHERE m.status = 'running' AND m.lease_expires_at < p.now_ms
