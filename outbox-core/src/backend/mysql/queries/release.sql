-- Gives claimed-but-unstarted messages back at shutdown (not an attempt).
-- ? worker, ? JSON array of ids
UPDATE outbox_jobs SET status = 'Pending', lock_by = NULL, lock_at = NULL
WHERE lock_by = ? AND status = 'Queued'
  AND id IN (SELECT i FROM JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t)
