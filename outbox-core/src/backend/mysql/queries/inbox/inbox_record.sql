-- Records that consumer ? processed message ? at ? (unix ms), in the caller's transaction;
-- a second record of the pair changes nothing (0 rows). IGNORE only meets the duplicate key:
-- the lengths are checked before (a longer value would otherwise be cut with a warning).
INSERT IGNORE INTO outbox_inbox (consumer, message_id, processed_at) VALUES (?, ?, ?)
