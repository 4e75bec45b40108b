-- Pending messages per type for types not in the given list. ?1: JSON array of type tags
SELECT job_type, COUNT(*)
FROM Jobs
WHERE status = 'Pending'
  AND job_type NOT IN (SELECT value FROM json_each(?1))
GROUP BY job_type
ORDER BY job_type
