-- Insert a batch of messages given as a JSON array; a taken idempotency key skips the row
-- without an error (the caller's transaction stays usable: no 23505). Returns the ids
-- written. $1: [{"id","queue","job" (payload JSON as a string),"run_at","priority","max_attempts","key"}]
INSERT INTO apalis.jobs (id, job_type, job, status, attempts, max_attempts, run_at, priority, metadata, idempotency_key)
SELECT r.id, r.queue, convert_to(r.job, 'UTF8'), 'Pending', 0, r.max_attempts, to_timestamp(r.run_at),
       r.priority, ''::hstore, r.key
FROM jsonb_to_recordset($1::jsonb)
     AS r(id text, queue text, job text, run_at bigint, priority integer, max_attempts integer, key text)
ON CONFLICT (job_type, idempotency_key) DO NOTHING
RETURNING id
