-- Sets when a failed or deferred message is due again. Only columns the ack leaves alone
-- are written. ? id, ? due (unix s), ? attempts given back (0 or 1)
UPDATE outbox_jobs AS j JOIN (SELECT ? AS id, ? AS due, ? AS extra) AS p ON j.id = p.id
SET j.run_at = p.due, j.max_attempts = j.max_attempts + p.extra
