-- Records how attempts ended (apalis' Complete events), all of a batch in one statement;
-- only the worker holding a message may. ? now (unix s), ? worker,
-- ? JSON array of {"id","status","attempts","result"} (joined, see claim.sql)
UPDATE outbox_jobs AS j
JOIN (SELECT ? AS now_s, ? AS worker) AS p
JOIN JSON_TABLE(?, '$[*]' COLUMNS (
    id VARCHAR(36) PATH '$.id',
    status VARCHAR(20) PATH '$.status',
    attempts INT PATH '$.attempts',
    result LONGTEXT PATH '$.result'
)) AS r ON j.id = r.id
SET j.status = r.status, j.attempts = r.attempts, j.last_result = r.result, j.done_at = p.now_s
WHERE j.lock_by = p.worker
