-- Ids of pending messages whose type is not in the given list. ?1: JSON array of type tags
SELECT id FROM Jobs
WHERE status = 'Pending' AND lock_by IS NULL
  AND job_type NOT IN (SELECT value FROM json_each(?1))
