-- Puts running messages of the types in $1 (JSON array of tags) whose lease expired before $2 (now, unix ms; NULL:
-- the database's clock) back in the
-- queue, keeping their due time (their place in line); the attempt stays counted and its
-- end joins the attempt log (the last 20 kept).
UPDATE outbox_messages
SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    last_error = 'the worker holding attempt ' || attempts || ' stopped renewing its lease (crash or stall)',
    attempt_log = (
        (CASE WHEN jsonb_array_length(COALESCE(attempt_log, '[]')::jsonb) >= 20
              THEN COALESCE(attempt_log, '[]')::jsonb - 0 ELSE COALESCE(attempt_log, '[]')::jsonb END)
        || jsonb_build_array(jsonb_build_object('attempt', attempts, 'at', (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint)), 'error',
            'the worker holding attempt ' || attempts || ' stopped renewing its lease (crash or stall)'))
    )::text
WHERE status = 'running' AND type_tag IN (SELECT jsonb_array_elements_text($1::jsonb)) AND lease_expires_at < (SELECT COALESCE($2::bigint, (extract(epoch FROM now()) * 1000)::bigint))
