-- Failed messages of one type due for another attempt, in priority order, locked so other
-- workers skip them (claims take pending messages first: fetch_pending_ids.sql).
-- ? queue, ? now (unix s), ? limit
SELECT id FROM outbox_jobs FORCE INDEX (outbox_jobs_claim)
WHERE job_type = ? AND status = 'Failed' AND attempts < max_attempts AND run_at <= ?
ORDER BY priority DESC, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
