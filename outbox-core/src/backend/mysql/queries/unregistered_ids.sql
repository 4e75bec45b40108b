-- Ids of pending messages whose type is not in the given list. ? JSON array of type tags
SELECT id FROM outbox_jobs
WHERE status = 'Pending' AND lock_by IS NULL
  AND job_type NOT IN (SELECT q FROM JSON_TABLE(?, '$[*]' COLUMNS (q VARCHAR(200) PATH '$')) AS t)
