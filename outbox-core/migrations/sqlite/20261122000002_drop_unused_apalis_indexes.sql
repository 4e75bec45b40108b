-- apalis-sqlite keeps two indexes that no statement of the outbox or of the apalis paths
-- it runs (fetch_next, lock, ack, keep_alive, reenqueue_orphaned, sink) reads:
--   idx_jobs_status_run_at (status, run_at)             -- apalis' dashboard/stats queries
--   idx_jobs_completed_done_at (status, done_at, run_at) -- apalis' vacuum/completed list
-- Every claim, lock and ack changes `status`, so each of them rewrote both entries of both
-- indexes for every message. Statements that filter on status alone (`unregistered_*`) use
-- apalis' partial idx_jobs_claimable instead. Measured effect: BENCHMARKS.md (SQLite).
DROP INDEX IF EXISTS idx_jobs_status_run_at;
DROP INDEX IF EXISTS idx_jobs_completed_done_at;
