-- Puts running messages of a type whose lease expired back in the queue, keeping their due
-- time (their place in line); the attempt stays counted. ? type, ? now (unix ms)
UPDATE outbox_messages
SET last_error = CONCAT('the worker holding attempt ', attempts, ' stopped renewing its lease (crash or stall)'),
    status = 'queued', lease_owner = NULL, lease_expires_at = NULL
WHERE type_tag = ? AND status = 'running' AND lease_expires_at < ?
