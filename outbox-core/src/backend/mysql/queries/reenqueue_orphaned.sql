-- Hands back the messages of workers presumed dead (no heartbeat since ?). A crash may
-- have happened mid-handler, so this counts as an attempt, as in apalis' own backends.
-- ? queue, ? dead-before (unix s), ? this worker
UPDATE outbox_jobs
SET status = 'Pending', lock_by = NULL, lock_at = NULL, done_at = NULL, attempts = attempts + 1,
    last_result = '{"Err":"Re-enqueued due to worker heartbeat timeout."}'
WHERE job_type = ?
  AND status IN ('Queued', 'Running')
  AND lock_by IN (SELECT id FROM outbox_workers WHERE last_seen < ? AND id <> ?)
