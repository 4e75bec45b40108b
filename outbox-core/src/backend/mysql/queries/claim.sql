-- Marks fetched messages as claimed by a worker. ? worker, ? now (unix s), ? JSON array of ids
UPDATE outbox_jobs SET status = 'Queued', lock_by = ?, lock_at = ?
WHERE id IN (SELECT i FROM JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t)
