-- Marks messages as running (apalis' Lock event). ? now (unix s), ? worker, ? JSON array of
-- ids (joined, see claim.sql)
UPDATE outbox_jobs AS j
JOIN (SELECT ? AS now_s, ? AS worker) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t ON j.id = t.i
SET j.status = 'Running', j.lock_at = p.now_s, j.lock_by = p.worker
WHERE j.status IN ('Queued', 'Pending') OR (j.status = 'Failed' AND j.attempts < j.max_attempts)
