-- Lets a claim read due messages of one type and status in priority order straight from
-- the index instead of sorting the whole backlog on every batch (BENCHMARKS.md).
CREATE INDEX outbox_jobs_claim ON outbox_jobs (job_type, status, priority DESC, run_at, id);
