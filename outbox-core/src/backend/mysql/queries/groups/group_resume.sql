-- Resumes a group; changes nothing if it was not paused. ? group
UPDATE outbox_groups SET paused_at = NULL, pause_reason = NULL
WHERE name = ? AND paused_at IS NOT NULL
