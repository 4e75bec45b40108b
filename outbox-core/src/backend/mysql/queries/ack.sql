-- Records how an attempt ended (apalis' Complete event); only the worker holding the
-- message may. ? status, ? attempts, ? result JSON, ? now (unix s), ? id, ? worker
UPDATE outbox_jobs SET status = ?, attempts = ?, last_result = ?, done_at = ?
WHERE id = ? AND lock_by = ?
