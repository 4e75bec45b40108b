-- Insert a batch of messages given as a JSON array. A taken idempotency key turns the row
-- into a no-op update (not INSERT IGNORE, which would also hide other errors); the caller
-- then reads the key holders back. ?: [{"id","queue","job","run_at","priority","max_attempts","key"}]
INSERT INTO outbox_jobs (job, id, job_type, status, attempts, max_attempts, run_at, priority, metadata, idempotency_key)
SELECT CAST(r.job AS BINARY), r.id, r.queue, 'Pending', 0, r.max_attempts, r.run_at, r.priority, '{}', r.idem_key
FROM JSON_TABLE(?, '$[*]' COLUMNS (
    id VARCHAR(36) PATH '$.id',
    queue VARCHAR(200) PATH '$.queue',
    job LONGTEXT PATH '$.job',
    run_at BIGINT PATH '$.run_at',
    priority INT PATH '$.priority',
    max_attempts INT PATH '$.max_attempts',
    idem_key VARCHAR(255) PATH '$.key'
)) AS r
ON DUPLICATE KEY UPDATE outbox_jobs.id = outbox_jobs.id
