-- The claimed rows. ? JSON array of ids
SELECT job, id, job_type, status, attempts, max_attempts, run_at, lock_by, priority, idempotency_key
FROM outbox_jobs
WHERE id IN (SELECT i FROM JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t)
ORDER BY priority DESC, run_at, id
