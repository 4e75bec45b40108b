-- Counts per type and state, one pass over the queue plus the dead letters. ?1 now (unix s)
SELECT job_type,
    SUM(CASE WHEN (status = 'Pending' OR (status = 'Failed' AND attempts = 0 AND attempts < max_attempts))
              AND run_at <= ?1 THEN 1 ELSE 0 END),
    SUM(CASE WHEN (status = 'Pending' OR (status = 'Failed' AND attempts = 0 AND attempts < max_attempts))
              AND run_at > ?1 THEN 1 ELSE 0 END),
    SUM(CASE WHEN status IN ('Queued', 'Running') THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'Failed' AND attempts > 0 AND attempts < max_attempts THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'Done' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'Killed' OR (status = 'Failed' AND attempts >= max_attempts) THEN 1 ELSE 0 END)
FROM Jobs
GROUP BY job_type
UNION ALL
SELECT type_tag, 0, 0, 0, 0, 0, COUNT(*) FROM outbox_dead_letters GROUP BY type_tag
