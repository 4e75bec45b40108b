-- Sets a group's completion hook: a message of the given type, payload, attempts and
-- priority, enqueued once nothing of the group is queued or running (a hook set again is
-- armed again). ? group, ? type, ? payload, ? attempts, ? priority
INSERT INTO outbox_groups (name, hook_type, hook_payload, hook_max_attempts, hook_priority)
VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE
    hook_type = VALUES(hook_type), hook_payload = VALUES(hook_payload),
    hook_max_attempts = VALUES(hook_max_attempts), hook_priority = VALUES(hook_priority),
    completed_at = NULL
