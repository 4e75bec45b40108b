-- Puts running messages of type $1 whose lease expired before $2 (unix ms) back in the
-- queue, keeping their due time (their place in line); the attempt stays counted.
UPDATE outbox_messages
SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
    last_error = 'the worker holding attempt ' || attempts || ' stopped renewing its lease (crash or stall)'
WHERE status = 'running' AND type_tag = $1 AND lease_expires_at < $2
