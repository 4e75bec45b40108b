-- Messages of the given, unpaused types that are due now, or claimed by workers whose
-- names start with the given prefix. ? JSON array of type tags, ? worker name prefix,
-- ? now (unix s)
SELECT COUNT(*)
FROM outbox_jobs AS j
CROSS JOIN (SELECT ? AS queues, ? AS prefix, ? AS now_s) AS p
WHERE JSON_CONTAINS(p.queues, JSON_QUOTE(j.job_type))
  AND j.job_type NOT IN (SELECT type_tag FROM outbox_paused)
  AND (
        (((j.status = 'Pending' AND j.lock_by IS NULL) OR (j.status = 'Failed' AND j.attempts < j.max_attempts))
         AND j.run_at <= p.now_s)
     OR (j.status IN ('Queued', 'Running') AND LEFT(j.lock_by, CHAR_LENGTH(p.prefix)) = p.prefix)
  )
