-- Pending messages per type for types not in the given list. $1: JSON array of type tags
SELECT job_type, COUNT(*)
FROM apalis.jobs
WHERE status = 'Pending'
  AND job_type NOT IN (SELECT jsonb_array_elements_text($1::jsonb))
GROUP BY job_type
ORDER BY job_type
