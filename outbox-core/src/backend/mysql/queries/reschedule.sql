-- Sets when a failed or deferred message is due again. Only columns the ack leaves alone
-- are written; max_attempts grows by the third parameter (a snooze gives its attempt back)
-- and never stays at or below attempts. ? id, ? due (unix s), ? 0|1
UPDATE outbox_jobs AS j JOIN (SELECT ? AS id, ? AS due, ? AS extra) AS p ON j.id = p.id
SET j.run_at = p.due, j.max_attempts = GREATEST(j.max_attempts + p.extra, j.attempts + 1)
