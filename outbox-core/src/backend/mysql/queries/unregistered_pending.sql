-- Pending messages per type for types not in the given list. ? JSON array of type tags
SELECT job_type, COUNT(*)
FROM outbox_jobs
WHERE status = 'Pending'
  AND job_type NOT IN (SELECT q FROM JSON_TABLE(?, '$[*]' COLUMNS (q VARCHAR(200) PATH '$')) AS t)
GROUP BY job_type
ORDER BY job_type
