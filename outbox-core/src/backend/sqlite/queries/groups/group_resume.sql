-- Resumes group ?1; changes nothing if it was not paused.
UPDATE outbox_groups SET paused_at = NULL, pause_reason = NULL
WHERE name = ?1 AND paused_at IS NOT NULL
