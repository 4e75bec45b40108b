-- Due messages of one type, claimed under row locks other workers skip.
-- ? queue, ? now (unix s), ? batch size
SELECT id FROM outbox_jobs
WHERE job_type = ?
  AND ((status = 'Pending' AND lock_by IS NULL) OR (status = 'Failed' AND attempts < max_attempts))
  AND run_at <= ?
ORDER BY priority DESC, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
