-- Gives claimed-but-unstarted messages back at shutdown (not an attempt).
-- ? worker, ? JSON array of ids (joined, see claim.sql)
UPDATE outbox_jobs AS j
JOIN (SELECT ? AS worker) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t ON j.id = t.i
SET j.status = 'Pending', j.lock_by = NULL, j.lock_at = NULL
WHERE j.lock_by = p.worker AND j.status = 'Queued'
