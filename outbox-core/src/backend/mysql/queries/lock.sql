-- Marks messages as running (apalis' Lock event). ? now (unix s), ? worker, ? JSON array of ids
UPDATE outbox_jobs SET status = 'Running', lock_at = ?, lock_by = ?
WHERE id IN (SELECT i FROM JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t)
  AND (status IN ('Queued', 'Pending') OR (status = 'Failed' AND attempts < max_attempts))
