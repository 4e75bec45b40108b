-- Deletes up to ?3 inbox rows processed more than ?2 ms before ?1 (now, unix ms).
DELETE FROM outbox_inbox
WHERE (consumer, message_id) IN (
    SELECT consumer, message_id FROM outbox_inbox WHERE processed_at < ?1 - ?2 LIMIT ?3
)
