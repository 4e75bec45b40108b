-- Messages of the given, unpaused types that are due now, or claimed by workers whose
-- names start with the given prefix. $1: JSON array of type tags, $2: worker name
-- prefix, $3: now (unix s)
SELECT COUNT(*)
FROM apalis.jobs
WHERE job_type IN (SELECT jsonb_array_elements_text($1::jsonb))
  AND job_type NOT IN (SELECT type_tag FROM outbox_paused)
  AND (
        ((status = 'Pending' OR (status = 'Failed' AND attempts < max_attempts)) AND run_at <= to_timestamp($3))
     OR (status IN ('Queued', 'Running') AND starts_with(lock_by, $2))
  )
