-- Counts per type and state, one pass over the queue plus the dead letters. ? now (unix s)
SELECT j.job_type,
    CAST(SUM((j.status = 'Pending' OR (j.status = 'Failed' AND j.attempts = 0 AND j.attempts < j.max_attempts))
             AND j.run_at <= p.now_s) AS SIGNED),
    CAST(SUM((j.status = 'Pending' OR (j.status = 'Failed' AND j.attempts = 0 AND j.attempts < j.max_attempts))
             AND j.run_at > p.now_s) AS SIGNED),
    CAST(SUM(j.status IN ('Queued', 'Running')) AS SIGNED),
    CAST(SUM(j.status = 'Failed' AND j.attempts > 0 AND j.attempts < j.max_attempts) AS SIGNED),
    CAST(SUM(j.status = 'Done') AS SIGNED),
    CAST(SUM(j.status = 'Killed' OR (j.status = 'Failed' AND j.attempts >= j.max_attempts)) AS SIGNED)
FROM outbox_jobs AS j CROSS JOIN (SELECT ? AS now_s) AS p
GROUP BY j.job_type
UNION ALL
SELECT type_tag, 0, 0, 0, 0, 0, COUNT(*) FROM outbox_dead_letters GROUP BY type_tag
