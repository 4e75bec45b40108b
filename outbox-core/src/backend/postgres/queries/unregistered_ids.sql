-- Ids of pending messages whose type is not in the given list. $1: JSON array of type tags
SELECT id FROM apalis.jobs
WHERE status = 'Pending' AND lock_by IS NULL
  AND job_type NOT IN (SELECT jsonb_array_elements_text($1::jsonb))
