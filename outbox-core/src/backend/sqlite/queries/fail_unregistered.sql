-- Give up pending messages whose type has no handler. ?1: JSON array of registered type
-- tags, ?2: the reason recorded as the message's last result
UPDATE Jobs
SET status = 'Killed',
    last_result = json_object('Err', ?2),
    done_at = strftime('%s', 'now')
WHERE status = 'Pending'
  AND lock_by IS NULL
  AND job_type NOT IN (SELECT value FROM json_each(?1))
