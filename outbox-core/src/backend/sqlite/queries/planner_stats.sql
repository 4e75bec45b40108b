-- Planner statistics for apalis' Jobs table. Without them SQLite plans apalis' lock
-- statement (`WHERE id IN (json_each(?)) AND status IN (...)`) as a scan of every row with
-- those statuses, and its ack by `lock_by`, so each batch costs O(backlog): 390 msgs/s at a
-- backlog of 5,000 in release (BENCHMARKS.md). These figures describe a large queue (ids
-- unique, few statuses); with them both statements look rows up by id. A later ANALYZE
-- replaces them with measured ones, which plan the same way once the table is populated.
ANALYZE sqlite_schema;
DELETE FROM sqlite_stat1 WHERE tbl = 'Jobs';
INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES
    ('Jobs', 'sqlite_autoindex_Jobs_1', '1000000 1'),
    ('Jobs', 'LIdx', '1000000 100000'),
    ('Jobs', 'idx_jobs_job_type_status_run_at', '1000000 100000 30000 2'),
    ('Jobs', 'idx_jobs_claimable', '1000000 300000 100000'),
    ('Jobs', 'idx_jobs_idempotency_key', '1000000 100000 1');
ANALYZE sqlite_schema;
