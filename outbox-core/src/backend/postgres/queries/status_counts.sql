-- Counts per type and state, one pass over the queue plus the dead letters. $1 now (unix s)
SELECT job_type,
    COUNT(*) FILTER (WHERE (status = 'Pending' OR (status = 'Failed' AND attempts = 0 AND attempts < max_attempts))
                       AND run_at <= to_timestamp($1)),
    COUNT(*) FILTER (WHERE (status = 'Pending' OR (status = 'Failed' AND attempts = 0 AND attempts < max_attempts))
                       AND run_at > to_timestamp($1)),
    COUNT(*) FILTER (WHERE status IN ('Queued', 'Running')),
    COUNT(*) FILTER (WHERE status = 'Failed' AND attempts > 0 AND attempts < max_attempts),
    COUNT(*) FILTER (WHERE status = 'Done'),
    COUNT(*) FILTER (WHERE status = 'Killed' OR (status = 'Failed' AND attempts >= max_attempts))
FROM apalis.jobs
GROUP BY job_type
UNION ALL
SELECT type_tag, 0, 0, 0, 0, 0, COUNT(*) FROM outbox_dead_letters GROUP BY type_tag
