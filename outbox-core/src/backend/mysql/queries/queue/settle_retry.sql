-- Puts failed messages back in the queue, due again at "due" (unix ms; a time past means now) or
-- "delay" ms after now, with the error;
-- "give_back" 1 returns the attempt (a snooze or a deferral: not a failed attempt, not
-- logged), otherwise the attempt's error joins the attempt log (the last 20 kept). Only
-- while leased to the worker for the settled claim.
-- ? worker, ? now (unix ms; NULL: the database's clock), ? JSON [{"id","attempt","claim","due"?,"delay"?,"text","give_back"}]
UPDATE outbox_messages AS m
JOIN (SELECT ? AS owner, COALESCE(?, CAST(@@timestamp * 1000 AS SIGNED)) AS now_ms) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (
    id VARCHAR(36) PATH '$.id', attempt INT PATH '$.attempt', claim INT PATH '$.claim', due BIGINT PATH '$.due', delay BIGINT PATH '$.delay',
    error TEXT PATH '$.text', give_back INT PATH '$.give_back'
)) AS r ON m.id = r.id AND m.claims = r.claim
SET m.attempt_log = CASE WHEN r.give_back = 1 THEN m.attempt_log ELSE JSON_ARRAY_APPEND(
        CASE WHEN JSON_LENGTH(COALESCE(m.attempt_log, '[]')) >= 20
             THEN JSON_REMOVE(m.attempt_log, '$[0]') ELSE COALESCE(m.attempt_log, '[]') END,
        '$', JSON_OBJECT('attempt', r.attempt, 'at', p.now_ms, 'error', r.error)) END,
    m.due_at = GREATEST(COALESCE(r.due, 0), p.now_ms + COALESCE(r.delay, 0)), m.last_error = r.error, m.attempts = m.attempts - r.give_back,
    m.status = 'queued', m.lease_owner = NULL, m.lease_expires_at = NULL
WHERE m.lease_owner = p.owner AND m.status = 'running'
