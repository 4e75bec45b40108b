-- Due, never-claimed messages of one type in priority order, read through the claim index
-- (no sort) and locked so other workers skip them. ? queue, ? now (unix s), ? limit
SELECT id FROM outbox_jobs FORCE INDEX (outbox_jobs_claim)
WHERE job_type = ? AND status = 'Pending' AND lock_by IS NULL AND run_at <= ?
ORDER BY priority DESC, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
