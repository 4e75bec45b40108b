-- Hands back the claimed messages of workers presumed dead: no heartbeat since $2 (unix s),
-- or no worker row at all. The crash may have come mid-handler: counts as an attempt. $1 queue
UPDATE apalis.jobs
SET status = 'Pending', lock_by = NULL, lock_at = NULL, done_at = NULL, attempts = attempts + 1,
    last_result = '{"Err":"Re-enqueued: its worker stopped sending heartbeats."}'::jsonb
WHERE job_type = $1
  AND status IN ('Queued', 'Running')
  AND (lock_by IS NULL OR lock_by NOT IN (SELECT id FROM apalis.workers WHERE last_seen >= to_timestamp($2)))
