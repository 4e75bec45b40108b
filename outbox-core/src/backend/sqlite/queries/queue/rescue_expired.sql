-- Puts running messages of the types in ?1 (JSON array of tags) whose lease expired before ?2 (unix ms) back in the
-- queue, keeping their due time (their place in line); the attempt stays counted and its
-- end joins the attempt log.
UPDATE outbox_messages
SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    last_error = 'the worker holding attempt ' || attempts || ' stopped renewing its lease (crash or stall)',
    attempt_log = json_insert(
        CASE WHEN json_array_length(COALESCE(attempt_log, '[]')) >= 20
             THEN json_remove(attempt_log, '$[0]') ELSE COALESCE(attempt_log, '[]') END,
        '$[#]', json_object('attempt', attempts, 'at', ?2, 'error',
            'the worker holding attempt ' || attempts || ' stopped renewing its lease (crash or stall)'))
WHERE status = 'running' AND type_tag IN (SELECT value FROM json_each(?1)) AND lease_expires_at < ?2
