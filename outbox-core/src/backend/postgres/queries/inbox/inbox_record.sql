-- Records that consumer $1 processed message $2 at $3 (unix ms), in the caller's
-- transaction; a second record of the pair changes nothing (0 rows). A concurrent record of
-- the same pair waits for the first transaction: 0 rows if it commits, 1 if it rolls back.
INSERT INTO outbox_inbox (consumer, message_id, processed_at) VALUES ($1, $2, $3)
ON CONFLICT (consumer, message_id) DO NOTHING
