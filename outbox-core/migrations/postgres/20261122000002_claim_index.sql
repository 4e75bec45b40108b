-- Lets apalis' get_jobs (ORDER BY priority DESC, run_at over pending and failed rows of one
-- type) read due messages in order from an index instead of sorting the backlog per batch.
CREATE INDEX IF NOT EXISTS outbox_jobs_claim
    ON apalis.jobs (job_type, priority DESC, run_at)
    WHERE status IN ('Pending', 'Failed');
