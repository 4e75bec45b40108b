-- Messages of the given, unpaused types that are due now, or claimed by workers whose
-- names start with the given prefix. ?1: JSON array of type tags, ?2: worker name
-- prefix, ?3: now (unix s)
SELECT COUNT(*)
FROM Jobs
WHERE job_type IN (SELECT value FROM json_each(?1))
  AND job_type NOT IN (SELECT type_tag FROM outbox_paused)
  AND (
        (status = 'Pending' AND lock_by IS NULL AND run_at <= ?3)
     OR (status = 'Failed' AND attempts < max_attempts AND run_at <= ?3)
     OR (status IN ('Queued', 'Running') AND substr(lock_by, 1, length(?2)) = ?2)
  )
