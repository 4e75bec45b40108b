-- Sets group $1's completion hook: a message of type $2 with payload $3, $4 attempts and
-- priority $5, enqueued once nothing of the group is queued or running (a hook set again is
-- armed again).
INSERT INTO outbox_groups (name, hook_type, hook_payload, hook_max_attempts, hook_priority)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (name) DO UPDATE SET
    hook_type = EXCLUDED.hook_type, hook_payload = EXCLUDED.hook_payload,
    hook_max_attempts = EXCLUDED.hook_max_attempts, hook_priority = EXCLUDED.hook_priority,
    completed_at = NULL
