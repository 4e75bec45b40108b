-- Each message keeps the replies of its failed attempts (JSON array of
-- {"attempt", "at" (unix ms), "error"}, the last 20), written only when an attempt fails,
-- and a dead letter keeps them with it; a message delivered at once never writes it.
ALTER TABLE outbox_messages ADD COLUMN attempt_log TEXT;
ALTER TABLE outbox_dead_letters ADD COLUMN attempt_log TEXT;
