-- Hands back the claimed messages of workers presumed dead: no heartbeat since the second
-- parameter (unix s), or no worker row at all; counts as an attempt. ? queue, ? dead-before
UPDATE outbox_jobs
SET status = 'Pending', lock_by = NULL, lock_at = NULL, done_at = NULL, attempts = attempts + 1,
    last_result = '{"Err":"Re-enqueued: its worker stopped sending heartbeats."}'
WHERE job_type = ?
  AND status IN ('Queued', 'Running')
  AND (lock_by IS NULL OR lock_by NOT IN (SELECT id FROM outbox_workers WHERE last_seen >= ?))
