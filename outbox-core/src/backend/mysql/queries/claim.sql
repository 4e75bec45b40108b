-- Marks fetched messages as claimed by a worker. ? worker, ? now (unix s), ? JSON array of
-- ids. (A join, not `id IN (SELECT … FROM JSON_TABLE …)`: MariaDB runs that form of UPDATE
-- as a dependent subquery over the whole table.)
UPDATE outbox_jobs AS j
JOIN (SELECT ? AS worker, ? AS now_s) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (i VARCHAR(36) PATH '$')) AS t ON j.id = t.i
SET j.status = 'Queued', j.lock_by = p.worker, j.lock_at = p.now_s
